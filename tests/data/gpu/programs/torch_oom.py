import torch

x = torch.empty(1 << 45, dtype=torch.uint8, device="cuda")
