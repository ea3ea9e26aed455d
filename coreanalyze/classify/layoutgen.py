"""Generate the name index of TensorFlow's layout (a maintainer's tool).

    python -m coreanalyze.classify.layoutgen --python .venv/bin/python [--litert GIT_DIR]
    python -m coreanalyze.classify.layoutgen --build-only

The first form extracts what the index is made of into layout/inputs.json.gz (the recorded
inputs) and builds layout/index.json.gz from them; --build-only rebuilds the index from the
recorded inputs (what the tests check: the committed index is what its inputs make).

Inputs, each with its provenance in the index:
- the TensorFlow wheel of that interpreter (`tensorflow`/`tensorflow-cpu`): the paths of its
  include/ tree (a mirror of the source tree), the source paths compiled into its libraries
  (`__FILE__`: what a fatal log's `file:line]` can show), the classes and namespaces its headers
  declare, the namespaces of its libraries' dynamic symbols, its libraries' names, the op
  registry (TF_GetAllOpList: every op, not only tf.raw_ops), TFLite's BuiltinOperator, and the
  ops its Python API's exported functions run (read from its Python files: `tf.reduce_mean`
  calls gen_math_ops.mean, which applies op Mean);
- jaxlib's wheel, when installed: XLA's compiled-in source paths and libraries;
- LiteRT's source tree (a git checkout of google-ai-edge/LiteRT): its file paths;
- layout/listings.txt: GPU and old-layout folders of tensorflow/tensorflow and openxla/xla that
  the CPU wheel lacks (cuda_driver.cc, gpu_event_mgr.cc, cupti_tracer.cc, ...).
The analyzer itself never imports tensorflow; this asks the given interpreter.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

from coreanalyze.classify.layout import _SOURCE, INDEX_FILE, LAYOUT_DIR, normalize

INPUTS_FILE = LAYOUT_DIR / "inputs.json.gz"
LISTINGS_FILE = LAYOUT_DIR / "listings.txt"

# Names too short or too common to say anything about where they live.
MIN_NAME = 4
MAX_CLASS_DIRS = 6
THIRD_PARTY_NAMESPACES = ("std", "absl", "pybind11", "nanobind")
MIN_SYMBOLS = 3  # a namespace of the symbol tables kept when at least this many symbols are in it
MAX_API_OPS = 3  # a Python API function that may run more ops than this names none of them

_ASK = r"""
import glob, importlib.util, json, os, sys
out = {}
for dist in ("tensorflow", "jaxlib"):
    spec = importlib.util.find_spec(dist)
    if spec is None:
        continue
    root = spec.submodule_search_locations[0]
    infos = sorted(glob.glob(os.path.join(os.path.dirname(root), dist.replace("-", "_") + "*.dist-info")))
    version = None
    for info in infos:
        for line in open(os.path.join(info, "METADATA"), encoding="utf-8"):
            if line.startswith("Name: "):
                name = line.split(":", 1)[1].strip()
            if line.startswith("Version: "):
                version = line.split(":", 1)[1].strip()
                break
        out[dist] = {"root": root, "distribution": name, "version": version}
if "tensorflow" in out and "--ops" in sys.argv:
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session
    buf = pywrap_tf_session.TF_GetAllOpList()
    ops = op_def_pb2.OpList()
    ops.ParseFromString(pywrap_tf_session.TF_GetBuffer(buf))
    out["tensorflow"]["ops"] = sorted(o.name for o in ops.op)
print(json.dumps(out))
"""

_NAMESPACE_OPEN = re.compile(r"^\s*(?:inline\s+)?namespace\s+([\w:]+)\s*\{")
_NAMESPACE_CLOSE = re.compile(r"^\s*\}\s*//\s*(?:end\s+)?namespace\s+([\w:]+)")
_CLASS = re.compile(r"^\s*(?:template\s*<[^;{]*>\s*)?(?:class|struct)\s+(?:(?:[A-Z_][A-Z0-9_]*|alignas\([^)]*\))\s+)*([A-Za-z_]\w*)\s*(?:final\s*)?(?::[^;{]*)?\{")
_BUILTIN = re.compile(r"^\s+([A-Z][A-Z0-9_]+)\s*=\s*\d+\s*$")
_STRINGS_PATH = re.compile(rb"[A-Za-z0-9_.+/-]{3,300}")


def _sha(items: list[str]) -> str:
    return hashlib.sha256("\n".join(items).encode()).hexdigest()


def _compiled_paths(lib: Path) -> list[str]:
    """Source paths among a library's strings (`__FILE__`, in logging and CHECKs)."""
    out = set()
    proc = subprocess.run(["strings", "-n", "6", str(lib)], capture_output=True, check=True)
    for raw in proc.stdout.splitlines():
        s = raw.decode("ascii", "replace")
        if "/" in s and _SOURCE.search(s) and _STRINGS_PATH.fullmatch(raw):
            out.add(s)
    return sorted(out)


def _symbol_namespaces(lib: Path) -> Counter[str]:
    """Namespaces (one and two levels) of a library's exported symbols, with counts."""
    proc = subprocess.run(["nm", "-D", "--defined-only", "-C", str(lib)], capture_output=True, text=True, check=True)
    counts: Counter[str] = Counter()
    for line in proc.stdout.splitlines():
        name = line.split(" ", 2)[-1]
        head = re.split(r"[<( ]", name, 1)[0]
        parts = head.split("::")
        if len(parts) >= 2 and parts[0].isidentifier():
            counts[parts[0]] += 1
            if len(parts) >= 3 and parts[1].isidentifier():
                counts[f"{parts[0]}::{parts[1]}"] += 1
    return counts


def _header_names(path: Path) -> tuple[set[str], list[str]]:
    """(classes defined, namespaces opened) in one header, by its Google-style namespace comments."""
    classes: set[str] = set()
    namespaces: list[str] = []
    stack: list[str] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return classes, namespaces
    for line in text.splitlines():
        if "namespace" in line:
            m = _NAMESPACE_OPEN.match(line)
            if m:
                stack.extend(m.group(1).split("::"))
                namespaces.append("::".join(stack))
                continue
            m = _NAMESPACE_CLOSE.match(line)
            if m:
                for _ in m.group(1).split("::"):
                    if stack:
                        stack.pop()
                continue
        if ("class" in line or "struct" in line) and "{" in line:
            m = _CLASS.match(line)
            if m and len(m.group(1)) >= MIN_NAME:
                classes.add(m.group(1))
    return classes, namespaces


def _gen_ops(path: Path) -> dict[str, str]:
    """function name -> op name in a generated gen_*_ops.py module (its _apply_op_helper call)."""
    out = {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_") and not node.name.startswith("_xla"):
            continue
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "_apply_op_helper":
                if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                    out[node.name] = call.args[0].value
                    break
    return out


def _exports(fn: ast.FunctionDef) -> list[str]:
    """The public names a function's @tf_export gives it, v1's included."""
    names = []
    for d in fn.decorator_list:
        if isinstance(d, ast.Call):
            f = d.func
            if (isinstance(f, ast.Name) and f.id == "tf_export") or (isinstance(f, ast.Attribute) and f.attr == "tf_export"):
                names += [a.value for a in d.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                for kw in d.keywords:
                    if kw.arg == "v1" and isinstance(kw.value, (ast.List, ast.Tuple)):
                        names += [e.value for e in kw.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return names


def python_api_ops(root: Path) -> dict[str, list[str]]:
    """Public API name (`math.reduce_mean`, `reduce_mean`) -> the ops its function applies
    directly through the generated wrappers (one level: what it calls of gen_*_ops)."""
    gen = {}
    out: dict[str, set[str]] = {}
    for p in sorted((root / "python").rglob("gen_*.py")):
        gen[p.stem] = _gen_ops(p)
        # A generated op function may be the public API itself (tf.math.segment_sum).
        for fn in ast.parse(p.read_text(encoding="utf-8")).body:
            if isinstance(fn, ast.FunctionDef) and fn.name in gen[p.stem]:
                for n in _exports(fn):
                    out.setdefault(n, set()).add(gen[p.stem][fn.name])
    for p in sorted((root / "python").rglob("*.py")):
        if p.stem.startswith("gen_") or "/test" in str(p) or p.stem.endswith("_test"):
            continue
        try:
            tree = ast.parse(p.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            names = _exports(fn)
            if not names:
                continue
            ops = set()
            for call in ast.walk(fn):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
                    op = gen.get(call.func.value.id, {}).get(call.func.attr)
                    if op:
                        ops.add(op)
            if ops:
                for n in names:
                    out.setdefault(n, set()).update(ops)
    return {k: sorted(v) for k, v in sorted(out.items())}


def extract(python: str, litert: Path | None) -> dict:
    asked = json.loads(subprocess.run([python, "-c", _ASK, "--ops"], capture_output=True, text=True, check=True).stdout)
    tf = asked["tensorflow"]
    root = Path(tf["root"])
    include = root / "include"
    headers = sorted(str(p.relative_to(include)) for p in include.rglob("*") if p.is_file())
    classes: dict[str, set[str]] = defaultdict(set)
    namespaces: dict[str, Counter[str]] = defaultdict(Counter)
    for rel in headers:
        if not rel.endswith((".h", ".hpp", ".inc")):
            continue
        d = rel.rsplit("/", 1)[0]
        found, opened = _header_names(include / rel)
        for c in found:
            classes[c].add(d)
        for ns in set(opened):
            namespaces[ns][d] += 1
    libs = [root / "libtensorflow_framework.so.2", root / "libtensorflow_cc.so.2",
            root / "python" / "lib_pywrap_tensorflow_common.so", root / "lite" / "python" / "libpywrap_tflite_common.so"]
    libs = [p for p in libs if p.exists()]
    compiled = sorted({p for lib in libs for p in _compiled_paths(lib)})
    symbols: Counter[str] = Counter()
    for lib in libs:
        symbols.update(_symbol_namespaces(lib))
    libraries = sorted(str(p.relative_to(root.parent)) for p in root.rglob("*.so*") if p.is_file())
    schema = root / "lite" / "python" / "schema_py_generated.py"
    builtins, inside = [], False
    for line in schema.read_text(encoding="utf-8").splitlines():
        if line.startswith("class "):
            inside = line.startswith("class BuiltinOperator(")
            continue
        m = _BUILTIN.match(line) if inside else None
        if m:
            builtins.append(m.group(1))
    inputs: dict = {
        "provenance": {"tensorflow": {k: tf[k] for k in ("distribution", "version")}},
        "headers": headers,
        "compiled": compiled,
        "libraries": libraries,
        "classes": {c: sorted(ds) for c, ds in sorted(classes.items())},
        "namespaces": {ns: dict(sorted(c.items())) for ns, c in sorted(namespaces.items())},
        "symbol_namespaces": {ns: n for ns, n in sorted(symbols.items()) if n >= MIN_SYMBOLS},
        "ops": tf["ops"],
        "tflite_builtins": sorted(builtins),
        "python_apis": python_api_ops(root),
    }
    jax = asked.get("jaxlib")
    if jax is not None:
        jroot = Path(jax["root"])
        jlibs = sorted(p for p in jroot.rglob("*.so*") if p.is_file())
        inputs["provenance"]["jaxlib"] = {k: jax[k] for k in ("distribution", "version")}
        inputs["compiled"] = sorted(set(inputs["compiled"]) | {p for lib in jlibs for p in _compiled_paths(lib)})
        inputs["libraries"] = sorted(set(libraries) | {str(p.relative_to(jroot.parent)) for p in jlibs})
    if litert is not None:
        commit = subprocess.run(["git", "--git-dir", str(litert), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        tree = subprocess.run(["git", "--git-dir", str(litert), "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True, text=True, check=True).stdout
        inputs["litert"] = sorted(p for p in tree.splitlines() if _SOURCE.search(p))
        inputs["provenance"]["litert"] = {"repository": "google-ai-edge/LiteRT", "commit": commit}
    elif INPUTS_FILE.exists():  # keep the recorded tree
        old = load_inputs()
        inputs["litert"] = old.get("litert", [])
        if "litert" in old["provenance"]:
            inputs["provenance"]["litert"] = old["provenance"]["litert"]
    for key in ("headers", "compiled", "libraries", "ops", "tflite_builtins", "litert", "python_apis"):
        if key in inputs:
            inputs["provenance"].setdefault("inputs", {})[key] = {"count": len(inputs[key]), "sha256": _sha(inputs[key])}
    return inputs


def _listings() -> tuple[list[str], list[str]]:
    """(paths, sources) of layout/listings.txt."""
    paths, sources = [], []
    for raw in LISTINGS_FILE.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        repo, folder, *names = raw.split()
        paths.extend(folder + n for n in names)
        sources.append(f"{repo}:{folder}")
    return paths, sources


def build(inputs: dict) -> dict:
    """The index: every name with the directories it lives in (ids into `dirs`)."""
    listed, listing_sources = _listings()
    dirs: dict[str, int] = {}

    def dir_id(path: str) -> int | None:
        norm = normalize(path)
        if norm is None:
            return None
        d = norm.rsplit("/", 1)[0] if "/" in norm else norm
        return dirs.setdefault(d, len(dirs))

    files: dict[str, set[int]] = defaultdict(set)
    stems: dict[str, set[int]] = defaultdict(set)
    headers = set(inputs["headers"])
    all_paths = [*inputs["headers"], *inputs["compiled"], *inputs.get("litert", []), *listed]
    for path in all_paths:
        if not _SOURCE.search(path):
            continue
        d = dir_id(path)
        if d is None:
            continue
        base = path.rsplit("/", 1)[-1]
        files[base].add(d)
        if base.endswith(".h") and path in headers:
            # A .cc sits beside its .h in these trees: the wheel ships the header of many a
            # source file whose path no string of its libraries keeps.
            files[base[:-2] + ".cc"].add(d)
        stem = re.sub(r"(\.cu)?\.\w+$", "", base)
        if len(stem) >= MIN_NAME:
            stems[stem].add(d)
    classes = {}
    for name, where in inputs["classes"].items():
        ids = sorted({i for i in (dir_id(w + "/x.h") for w in where) if i is not None})
        if ids and len(ids) <= MAX_CLASS_DIRS:
            classes[name] = ids
    namespaces = {}
    symbol_ns = inputs["symbol_namespaces"]
    for ns, where in inputs["namespaces"].items():
        # The standard library's, Abseil's and the Python bindings' namespaces are every
        # extension's: TensorFlow's headers reopen them (pybind11's type casters for tensors in
        # python/lib/core), which says nothing of the subsystem a frame of them is in.
        if ns.split("::")[0] in THIRD_PARTY_NAMESPACES or ns not in symbol_ns and "::" not in ns:
            continue
        counted: Counter[int] = Counter()
        for w, n in where.items():
            i = dir_id(w + "/x.h")
            if i is not None:
                counted[i] += n
        if counted:
            top = counted.most_common(8)
            namespaces[ns] = [[i for i, _ in top], [n for _, n in top]]
    ops = {}
    kernels = dir_id("tensorflow/core/kernels/x.cc")
    data = dir_id("tensorflow/core/kernels/data/x.cc")
    tf2xla = dir_id("tensorflow/compiler/tf2xla/kernels/x.cc")
    tpu = dir_id("tensorflow/core/tpu/kernels/x.cc")
    tflite = dir_id("tensorflow/lite/kernels/x.cc")
    for name in inputs["ops"]:
        # The registry keeps no file: where its kernels live follows from the op's family.
        if re.search(r"Dataset(V\d)?$|Iterator(V\d)?$|^(Iterator|MultiDeviceIterator|AnonymousIterator)", name):
            ops[name] = data
        elif re.match(r"_?Xla|^XlaHost", name):
            ops[name] = tf2xla
        elif re.search(r"TPU|Tpu", name):
            ops[name] = tpu
        else:
            ops[name] = kernels
    for name in inputs["tflite_builtins"]:
        ops.setdefault(name, tflite)
    # tf.math.reduce_mean -> Mean: the Python API's functions by the generated op wrappers they
    # call, so that a script's `tf.reduce_mean(x)` names the op its kernel runs.
    apis = {name: names for name, names in inputs.get("python_apis", {}).items() if len(names) <= MAX_API_OPS}
    libraries = {}
    for path in inputs["libraries"]:
        d = dir_id(path)
        if d is not None:
            libraries.setdefault(path.rsplit("/", 1)[-1], d)
    provenance = dict(inputs["provenance"])
    provenance["listings"] = listing_sources
    provenance["prefix_table"] = "coreanalyze/classify/layout/prefixes.txt (applied when the index is read)"
    return {
        "provenance": provenance,
        "dirs": list(dirs),
        "files": {k: sorted(v) for k, v in sorted(files.items())},
        "stems": {k: sorted(v) for k, v in sorted(stems.items())},
        "classes": dict(sorted(classes.items())),
        "namespaces": dict(sorted(namespaces.items())),
        "ops": dict(sorted(ops.items())),
        "apis": dict(sorted(apis.items())),
        "libraries": dict(sorted(libraries.items())),
    }


def _write(path: Path, data: dict) -> None:
    raw = json.dumps(data, separators=(",", ":"), sort_keys=False).encode()
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, compresslevel=9, filename="") as z:
        z.write(raw)


def load_inputs() -> dict:
    with gzip.open(INPUTS_FILE, "rt", encoding="utf-8") as f:
        return json.load(f)


def encoded(data: dict) -> bytes:
    """The bytes of data as _write stores it (uncompressed): what the test compares."""
    return json.dumps(data, separators=(",", ":"), sort_keys=False).encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="an interpreter with tensorflow installed")
    parser.add_argument("--litert", type=Path, help="a git directory of google-ai-edge/LiteRT")
    parser.add_argument("--build-only", action="store_true", help="rebuild the index from the recorded inputs")
    args = parser.parse_args(argv)
    if not args.build_only:
        _write(INPUTS_FILE, extract(args.python, args.litert))
    index = build(load_inputs())
    _write(INDEX_FILE, index)
    print(f"{INDEX_FILE}: {len(index['dirs'])} directories, {len(index['files'])} files, {len(index['classes'])} classes, "
          f"{len(index['namespaces'])} namespaces, {len(index['ops'])} ops, {len(index['apis'])} Python API functions, "
          f"{len(index['libraries'])} libraries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
