"""Generate the known crashes of TensorFlow's security advisories (a maintainer's tool).

    python -m coreanalyze.known.tfsagen DIR [--source WHERE] [--commit SHA]
    python -m coreanalyze.known.tfsagen --build-only

TensorFlow's tree keeps one Markdown file per advisory, `tensorflow/security/advisory/tfsa-*.md`
(`## TFSA-2022-145: <title>`, `### CVE Number`, `### Impact`, `### Patches` with the fixing
commits and "The fix will be included in TensorFlow 2.11. We will also cherrypick this commit
on TensorFlow 2.10.1, ..."; 2020's "We recommend users to upgrade to TensorFlow 1.15.4, 2.0.3,
..."; 2018's and 2019's have a `### Mitigation` instead: "integrated into TensorFlow 1.7.0 and
newer"). The first form reads DIR's tfsa-*.md files into known/tfsa_inputs.json.gz (the
recorded inputs: every text, where they came from, their digest) and writes known/tfsa.toml
from them; --build-only rebuilds tfsa.toml from the recorded inputs
(what the tests check: the committed file is what its inputs make).

Each advisory that names an op and a way to crash becomes a [[crash]] of the known-crash format
(coreanalyze/known/crashes.toml): `match.ops` the op(s) it names (`tf.raw_ops.DynamicStitch` is
op DynamicStitch; TensorFlow Lite's advisories are left out: its kernels are not these ops), `match.fault_kind` the fault kinds its words allow (a segfault or a null
pointer: null-deref or invalid-access; a CHECK fail: check-failure; an FPE: divide-by-zero; a
heap overflow or a double free: heap-corruption or invalid-access), `fixed_in` the releases
patched (one per release line) and `match.before_fix`: a process that ran a patched release for
its line is not this crash. Advisories without an op (TFLite model files, tools) or without a
crash (leaks, wrong results), and those naming only ops too generic to be safe (GENERIC_OPS, the
while-loop frame ops), are recorded as read, and left out of the entries.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import sys
from pathlib import Path

from coreanalyze.known import version_key

HERE = Path(__file__).resolve().parent
INPUTS_FILE = HERE / "tfsa_inputs.json.gz"
DATA_FILE = HERE / "tfsa.toml"
ADVISORY_PATH = "tensorflow/security/advisory"
REPOSITORY = "tensorflow/tensorflow"
FILE_URL = f"https://github.com/{REPOSITORY}/blob/master/{ADVISORY_PATH}/{{name}}"

_FILE = re.compile(r"^tfsa-(\d{4})-(\d{3})\.md$")
_HEADER = re.compile(r"^##?\s*(TFSA-\d{4}-\d{3})\s*:\s*(.+?)\s*$", re.MULTILINE)
_SECTION = re.compile(r"^###\s*(.+?)\s*$", re.MULTILINE)
_CVE = re.compile(r"\bCVE-\d{4}-\d{4,7}\b")
_COMMIT = re.compile(r"\b[0-9a-f]{40}\b")
_RAW_OP = re.compile(r"\btf\.raw_ops\.([A-Z][A-Za-z0-9_]*)")
_CAMEL = re.compile(r"\b_?[A-Z][A-Za-z0-9]*[a-z0-9][A-Z][A-Za-z0-9]*\b|\b[A-Z][a-z]+[A-Z0-9]\w*\b")
_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
# "we will patch all releases between 1.15 and 2.3 inclusive": release lines patched in releases
# the advisory does not name (2020's last advisories).
_UNNAMED_PATCHES = re.compile(r"patch all releases\s+between\s+\d+\.\d+\s+and\s+\d+\.\d+")
_VERSION = re.compile(r"(?<![\w.])(\d+\.\d+(?:\.\d+)?)(?![\w.]*\w)")
# TensorFlow Lite's and TFLite Micro's advisories: their kernels are not TensorFlow's ops of the
# same name (TFLite Micro's GatherNd is not tf.raw_ops.GatherNd), and a model file is their input.
_TFLITE = re.compile(r"\bTF ?Lite\b|\bTensorFlow Lite\b|\btflite\b", re.IGNORECASE)

# What an advisory's words say about how the process died, as fault kinds (docs/json-contract.md).
# The first rule that matches the title wins; the impact's text is read when the title says none.
SEGV = ("null-deref", "invalid-access")
FAULT_WORDS: tuple[tuple[re.Pattern, tuple[str, ...]], ...] = (
    # CHECK as the macro's capitals: "explicitly check `context->status()`" is no CHECK failure.
    (re.compile(r"\bCHECK\b|CHECK_[A-Z]+|\b[Cc]heck[- ]fail|\bDCHECK"), ("check-failure", "abort")),
    (
        re.compile(r"\bFPE\b|floating[- ]point exception|divi(de|sion)[- ]by[- ](zero|0\b)|\bSIGFPE\b", re.IGNORECASE),
        ("divide-by-zero",),
    ),
    (
        re.compile(
            r"double[- ]free|use[- ]after[- ]free|\bUAF\b|heap[- ]buffer[- ]overflow|heap[- ]overflow|heap[- ]underflow|heap (OOB|out[- ]of[- ](bounds?|buffer))"
            r"|memory corruption",
            re.IGNORECASE,
        ),
        ("heap-corruption", "invalid-access", "null-deref", "abort"),
    ),
    # std::bad_alloc out of an op's Compute: the exception ends the process (std::terminate).
    (re.compile(r"\bbad[_ ]alloc\b", re.IGNORECASE), ("uncaught-exception", "out-of-memory", "abort")),
    (
        re.compile(r"seg(mentation)?[- ]?fault|\bNPE\b|null[- ]?(pointer|ptr|dereference)|nullptr|\bSIGSEGV\b", re.IGNORECASE),
        SEGV,
    ),
    (re.compile(r"stack[- ]overflow|infinite recursion|stack exhaustion", re.IGNORECASE), ("stack-overflow",)),
    # "OOM due to integer overflow in `StringNGrams`": the overflow is the cause, the OOM the crash.
    (re.compile(r"memory exhaustion|\bOOM\b|out of memory", re.IGNORECASE), ("out-of-memory",)),
    (
        re.compile(
            r"\bOOB\b|out[- ]of[- ]bounds?|out[- ]of[- ]buffer|outside\s+of\s+bounds|buffer overflow|overflow", re.IGNORECASE
        ),
        (*SEGV, "heap-corruption", "check-failure"),
    ),
    (re.compile(r"deadlock|infinite loop", re.IGNORECASE), ("hang",)),
    (re.compile(r"\bcrash(es|ed)?\b|denial of service|abort", re.IGNORECASE), ("check-failure", "abort", *SEGV)),
)


# Ops too generic to name a crash: the frame markers of every graph-mode while loop, which an
# advisory names as graph structure (TFSA-2021-175: "`Exit` node is not preceded by `Enter` op",
# a crash while the executor lays out the graph, in no kernel of theirs). An advisory left with no
# other op gets no entry.
GENERIC_OPS = frozenset({"Enter", "Exit", "RefEnter", "RefExit", "NextIteration", "RefNextIteration", "LoopCond"})


def _sections(text: str) -> dict[str, str]:
    """'### Name' -> its text, names lowercased."""
    marks = list(_SECTION.finditer(text))
    return {
        m.group(1).strip().lower(): text[m.end() : marks[i + 1].start() if i + 1 < len(marks) else len(text)]
        for i, m in enumerate(marks)
    }


def fault_kinds(title: str, impact: str) -> list[str]:
    for text in (title, _CODE_BLOCK.sub(" ", impact)):
        for pattern, kinds in FAULT_WORDS:
            if pattern.search(text):
                return list(kinds)
    return []


def op_names(title: str, impact: str, registry: frozenset[str]) -> list[str]:
    """The ops an advisory is about: registry names its title spells, else `tf.raw_ops.X` of its
    impact (prose and reproducer; a reproducer that calls none of the raw ops the prose names was
    pasted from another advisory: TFSA-2021-005's Conv3D), else the registry names of the first
    sentence of the impact's prose that names any (TFSA-2020-020's "The check exists for
    `DenseCountSparseOutput`" is the op that is not vulnerable). A title's family `MatrixDiag*`
    is the impact's raw ops of that family (MatrixDiagV2, MatrixDiagV3), and `MatrixDiagV*` every
    version of MatrixDiag the registry has."""
    prose = _CODE_BLOCK.sub(" ", impact)
    families = re.findall(r"`(?:tf\.raw_ops\.)?([A-Z]\w*)\*`", title)
    if families:
        members = [op for op in _RAW_OP.findall(impact) if op.startswith(tuple(families)) and op not in families]
        # "all operations of type `tf.raw_ops.MatrixDiagV*`": every version the registry has.
        members += sorted(op for op in registry for f in families if f.endswith("V") and re.fullmatch(re.escape(f) + r"\d+", op))
        if members:
            return list(dict.fromkeys(members))
    # "`{Experimental,}DatasetToTFRecord`" is ExperimentalDatasetToTFRecord and DatasetToTFRecord.
    title = re.sub(r"\{(\w*),(\w*)\}(\w+)", r"\1\3 \2\3", title)
    found = [w for w in re.findall(r"`(\w+)\*?`", title) + _CAMEL.findall(title) if w in registry]
    found += [op for op in _RAW_OP.findall(title) if op in registry or not registry]
    # "Heap OOB in `FusedBatchNorm` kernels" whose reproducer calls FusedBatchNormGrad: the
    # title's op names the kernel family, and the reproducer's member of it is the one that crashed.
    found += [op for op in _RAW_OP.findall(impact) if op in registry and op not in found and op.startswith(tuple(found))]
    if not found:
        named, called = _RAW_OP.findall(prose), _RAW_OP.findall("".join(_CODE_BLOCK.findall(impact)))
        # A reproducer that calls none of the raw ops the prose names is another advisory's.
        named_ops = [op for op in named if op in registry]
        found = named_ops if named_ops and not set(named_ops) & set(called) else _RAW_OP.findall(impact)
        # "`tf.raw_ops.MatrixDiagPartOp`" names the kernel class: its op is MatrixDiagPart.
        found = [op[:-2] if op not in registry and op.endswith("Op") and op[:-2] in registry else op for op in found]
        # "`tf.raw_ops.Map*` and `tf.raw_ops.OrderedMap*` operations": a family's stem is no op, and
        # every op it begins is too many (MapDataset is no map staging op); the reproducer's are read.
        found = [op for op in found if op in registry] if registry else found
    if not found:
        for sentence in re.split(r"(?<=[.!?:])\s+", prose):
            found = [w for w in _CAMEL.findall(sentence) if w in registry]
            if found:
                break
    return [op for op in dict.fromkeys(found) if op not in GENERIC_OPS]


def patched_versions(patches: str) -> list[str]:
    """The releases that carry the fix: "included in TensorFlow 2.11" is 2.11.0, "cherrypick this
    commit on TensorFlow 2.10.1, 2.9.3" adds those; a sentence that says it will not is left out."""
    versions: set[str] = set()
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z])|\n\s*\n", _COMMIT.sub(" ", patches)):
        if re.search(r"\bnot\b|n't\b", sentence) or "TensorFlow" not in sentence:
            continue
        for v in _VERSION.findall(sentence):
            parts = v.split(".")
            if parts[0] != "2" and parts[0] != "1":
                continue
            versions.add(".".join((parts + ["0"])[:3]))
    return sorted(versions, key=lambda v: version_key(v) or ())


def parse_advisory(name: str, text: str, registry: frozenset[str]) -> dict:
    """One tfsa-*.md file: its id, CVEs, title, ops, fault kinds, patched releases and commits."""
    header = _HEADER.search(text)
    sections = _sections(text)
    impact = sections.get("impact", "")
    # 2018's and 2019's advisories say what carries the fix under "### Mitigation" ("integrated into
    # TensorFlow 1.7.0 and newer", "switch to TensorFlow 1.15 or 2.0"); later ones, "### Patches".
    patches = sections.get("patches") or sections.get("mitigation", "")
    # 2018's titles end in a full stop ("BMP File Parser Out-of-bounds Read.").
    title = re.sub(r"\s+", " ", header.group(2)).strip().rstrip(".") if header else ""
    return {
        "id": header.group(1) if header else name.removesuffix(".md").upper(),
        "file": name,
        "title": title,
        "cves": list(dict.fromkeys(_CVE.findall(sections.get("cve number", "") or text))),
        "ops": op_names(title, impact, registry),
        "fault_kinds": fault_kinds(title, impact),
        "xla": bool(re.search(r"\bXLA\b|jit_compile", title + impact)),
        "tflite": bool(_TFLITE.search(title)),
        "patched": patched_versions(patches),
        "unnamed_patches": bool(_UNNAMED_PATCHES.search(re.sub(r"\s+", " ", patches))),
        "commits": list(dict.fromkeys(_COMMIT.findall(patches))),
    }


def read_dir(folder: Path) -> dict[str, str]:
    """tfsa-*.md files of a folder, name -> text, in name order."""
    return {p.name: p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.iterdir()) if _FILE.match(p.name)}


def digest(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return h.hexdigest()


def read_commits(folder: Path) -> dict[str, str]:
    """The folder's COMMITS file, when there is one: `tfsa-2022-145.md <commit>` a line, the commit
    of TensorFlow's tree each file was read at (files gathered one by one rather than from one checkout)."""
    path = folder / "COMMITS"
    if not path.is_file():
        return {}
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 2 and _FILE.match(parts[0]) and _COMMIT.fullmatch(parts[1]):
            found[parts[0]] = parts[1]
    return found


def make_inputs(folder: Path, source: str, commit: str | None) -> dict:
    files = read_dir(folder)
    if not files:
        raise SystemExit(f"no tfsa-*.md files in {folder}")
    from coreanalyze.classify import layoutgen

    return {
        "provenance": {
            "source": source,
            "commit": commit,
            "file_commits": {name: c for name, c in read_commits(folder).items() if name in files},
            "path": ADVISORY_PATH,
            "files": len(files),
            "sha256": digest(files),
            "op_registry": layoutgen.load_inputs()["provenance"]["tensorflow"],
        },
        "ops": layoutgen.load_inputs()["ops"],
        "files": files,
    }


def load_inputs() -> dict:
    with gzip.open(INPUTS_FILE, "rt", encoding="utf-8") as f:
        return json.load(f)


def write_inputs(inputs: dict) -> None:
    data = json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode()
    INPUTS_FILE.write_bytes(gzip.compress(data, mtime=0))


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(type(value))


def _op_pattern(ops: list[str]) -> list[str]:
    return [re.escape(op) for op in ops]


def entry_of(adv: dict) -> dict | None:
    """The [[crash]] of one parsed advisory; None when it names no op, no crash or no release, or
    is TensorFlow Lite's, or some release lines got the fix in releases it does not name: a
    process on such a line could not be told whether it has the fix."""
    if not adv["ops"] or not adv["fault_kinds"] or not adv["patched"] or adv.get("tflite") or adv.get("unnamed_patches"):
        return None
    cve = f" ({', '.join(adv['cves'])})" if adv["cves"] else ""
    commits = ", ".join(c[:12] for c in adv["commits"][:4])
    lines = ", ".join(adv["patched"])
    advice = f"Upgrade TensorFlow to a release with the fix ({lines}, or any later release line)"
    advice += f"; the fixing commit{'s' if len(adv['commits']) > 1 else ''}: {commits}." if commits else "."
    advice += " Until then, validate the op's inputs before calling it."
    return {
        "id": adv["id"],
        "title": f"{adv['id']}{cve}: {adv['title']}" + (" (with XLA)" if adv["xla"] and "XLA" not in adv["title"] else ""),
        "url": FILE_URL.format(name=adv["file"]),
        "fixed_in": adv["patched"],
        "advice": advice,
        "ops": adv["ops"],
        "fault_kind": adv["fault_kinds"],
    }


def _commits_text(file_commits: dict[str, str]) -> str:
    """'c7ffe90138b2 (tfsa-2023-016), 359383ce0e04 (12 files), ...': each commit and what was read at it."""
    by_commit: dict[str, list[str]] = {}
    for name, commit in sorted(file_commits.items()):
        by_commit.setdefault(commit, []).append(name.removesuffix(".md"))
    parts = [
        f"{c[:12]} ({names[0] if len(names) == 1 else f'{len(names)} files'})"
        for c, names in sorted(by_commit.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]
    return ", ".join(parts) or "unknown"


def build(inputs: dict) -> str:
    """tfsa.toml's text from the recorded inputs."""
    registry = frozenset(inputs["ops"])
    parsed = [parse_advisory(name, text, registry) for name, text in sorted(inputs["files"].items())]
    entries = [e for e in (entry_of(a) for a in parsed) if e is not None]
    prov = inputs["provenance"]
    read = [a["id"] for a in parsed]
    left = [a["id"] for a in parsed if entry_of(a) is None]
    out = [
        "# GENERATED by `python -m coreanalyze.known.tfsagen` from TensorFlow's security advisories: do not edit.",
        "# Known crashes in the format of crashes.toml; coreanalyze/known/tfsagen.py says how each field is read.",
        "",
        "[provenance]",
        f"source = {_toml(prov['source'])}",
        f"commit = {_toml(prov['commit'] or 'per file: ' + _commits_text(prov.get('file_commits') or {}))}",
        f"path = {_toml(prov['path'])}",
        f"inputs_sha256 = {_toml(prov['sha256'])}",
        f"op_registry = {_toml(prov['op_registry']['distribution'] + ' ' + prov['op_registry']['version'])}",
        f"read = {_toml(read)}",
        f"without_entry = {_toml(left)}",
        "",
    ]
    for e in entries:
        out += [
            "[[crash]]",
            f"id = {_toml(e['id'])}",
            f"title = {_toml(e['title'])}",
            f"url = {_toml(e['url'])}",
            f"advice = {_toml(e['advice'])}",
            "[crash.fixed_in]",
            f"tensorflow = {_toml(e['fixed_in'])}",
            "[crash.match]",
            f"ops = {_toml(e['ops'])}",
            f"fault_kind = {_toml(e['fault_kind'])}",
            "before_fix = true",
            "",
        ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m coreanalyze.known.tfsagen", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "folder", nargs="?", type=Path, help="a folder of tfsa-*.md files (TensorFlow's tensorflow/security/advisory)"
    )
    ap.add_argument("--source", default=f"https://github.com/{REPOSITORY}", help="where the files came from")
    ap.add_argument("--commit", help="the commit of that tree the files were read at")
    ap.add_argument("--build-only", action="store_true", help="rebuild tfsa.toml from the recorded inputs")
    args = ap.parse_args(argv)
    if args.build_only:
        inputs = load_inputs()
    elif args.folder is None:
        ap.error("give a folder of tfsa-*.md files, or --build-only")
    else:
        inputs = make_inputs(args.folder, args.source, args.commit)
        write_inputs(inputs)
    text = build(inputs)
    DATA_FILE.write_text(text, encoding="utf-8")
    entries = text.count("[[crash]]")
    print(f"{DATA_FILE}: {entries} known crashes from {len(inputs['files'])} advisories", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
