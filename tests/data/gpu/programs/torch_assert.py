"""A device-side assert: an index out of range in a CUDA gather."""
import torch

table = torch.zeros(8, device="cuda")
index = torch.tensor([3, 11], device="cuda")
print(table[index].sum().item())
