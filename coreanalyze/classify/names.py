"""Function names reduced to the part that identifies code across builds and across tools.

gdb, c++filt, a pasted backtrace and a symbol table spell the same function differently:
with or without the parameter list, a return type in front of template functions,
`(anonymous namespace)` or `{anonymous}`, absl's inline namespace `lts_20250814`, libstdc++'s
`__cxx11`, compiler clone suffixes (`.isra.0`, `.cold`, `[clone .constprop.0]`) and glibc's
internal aliases (`__GI_raise`, `__memcpy_avx_unaligned_erms`). Rules and signatures match the
reduced form only, so one rule covers every spelling.
"""

from __future__ import annotations

import re
from functools import lru_cache

from coreanalyze.base.demangle import demangle

# Longest names we bother to reduce: demangled template names can run to megabytes in a
# hostile symbol table, and nothing useful hides past this.
MAX_NAME = 4096

_CLONE_BRACKETS = re.compile(r"\s*\[clone [^\]]*\]")
_ABI_TAGS = re.compile(r"\[abi:[\w.]+\]")
# Raw symbol suffixes GCC/LLVM add to specialised copies of a function.
_CLONE_SUFFIX = re.compile(r"(?:\.(?:isra|constprop|part|cold|lto_priv|llvm|localalias|clone|specialized)(?:\.\d+)*)+$")
_OFFSET = re.compile(r"\s*\+\s*(?:0x[0-9a-fA-F]+|\d+)$")
_SYMBOL_VERSION = re.compile(r"@@?[\w.]+$")  # dlopen@@GLIBC_2.34
_ANON_NAMESPACE = re.compile(r"(?:\(anonymous namespace\)|\{anonymous\}|`anonymous namespace')(?:::)?")
_ABSL_INLINE = re.compile(r"\blts_\d+::")
_STD_INLINE = re.compile(r"\bstd::(?:__1|__cxx11|__u|__ndk1|_V2)::")
_GCC_LAMBDA = re.compile(r"\{lambda\([^{}]*\)#\d+\}")
_CLANG_LAMBDA = re.compile(r"(?<=::)\$_\d+\b|(?<=::)'lambda\d*'\([^()]*\)")
_QUALIFIERS_AFTER_PARAMS = re.compile(r"(?:\s*(?:const\b|volatile\b|noexcept\b|&&|&))+")
_SPACES = re.compile(r"\s+")


# The characters that matter to the bracket walks below; everything between them is copied in
# one slice, so a long name costs a few regex steps, not one Python step per character.
_SPECIAL = re.compile(r"\boperator(?:\(\)|\[\]|[<>=!+\-*/%^&|~,]+)?|[<>()]")


def _strip_param_lists(s: str) -> str:
    """Drop every "(...)" parameter list outside template arguments, with its qualifiers.

    Nested scopes keep their enclosing function's parameters in demangled names
    ('Iterator::GetNextInternal(Ctx*, bool*)::{lambda}::operator()'); those go too. The
    parentheses of 'operator()' are part of the name and stay.
    """
    out: list[str] = []
    angle = 0  # depth of <...> outside any parameter list
    paren = 0  # depth of a parameter list being dropped
    copied = 0  # s[copied:] not yet handled
    skip_to = 0
    for m in _SPECIAL.finditer(s):
        token, at = m.group(0), m.start()
        if at < skip_to:
            continue
        if paren:
            if token == "(":
                paren += 1
            elif token == ")":
                paren -= 1
                if paren == 0:
                    q = _QUALIFIERS_AFTER_PARAMS.match(s, m.end())
                    copied = skip_to = q.end() if q else m.end()
            continue
        if token.startswith("operator"):
            continue  # copied with the text around it
        if token == "<":
            angle += 1
        elif token == ">" and angle > 0:
            angle -= 1
        elif token == "(" and angle == 0:
            out.append(s[copied:at])
            paren, copied = 1, at
    out.append(s[copied:])  # an unbalanced "(" keeps the rest as it is
    return "".join(out)


_FUNCTION_HANDLER = re.compile(r"^std::(?:__\d+::)?_Function_handler<")


def _function_handler_callable(s: str) -> str:
    """'std::_Function_handler<void (long, long), X::run(...)::{lambda}>::_M_invoke(...)' ->
    'X::run(...)::{lambda}::operator()': the frame runs the callable (an Eigen TensorExecutor's
    shard, a tf.data lambda), and its name says whose work it is. Library callables (std::_Bind,
    another std::function) stay the handler's."""
    if not _FUNCTION_HANDLER.match(s):
        return s
    start = s.index("<")
    depth, args, begin = 0, [], start + 1
    for i in range(start, len(s)):
        c = s[i]
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
            if depth == 0:
                args.append(s[begin:i])
                end = i
                break
        elif c == "," and depth == 1:
            args.append(s[begin:i])
            begin = i + 1
    else:
        # Cut inside the template arguments (a narrow terminal, a ticket's excerpt): the callable
        # that was being named is still the frame's best name.
        partial = s[begin:].strip()
        if not args or not partial or partial.startswith(("std::", "__gnu_cxx::")):
            return s
        return partial
    if len(args) < 2 or not s[end + 1 :].startswith("::_M_invoke"):
        return s
    callable_ = args[-1].strip()
    if callable_.startswith(("std::", "__gnu_cxx::")) or not callable_:
        return s
    return callable_ + "::operator()"


def _strip_templates(s: str) -> str:
    """Remove <...> template arguments, keeping operator<, operator<<, operator-> etc."""
    out: list[str] = []
    depth = 0
    copied = 0
    for m in _SPECIAL.finditer(s):
        token, at = m.group(0), m.start()
        if token.startswith("operator"):
            if depth == 0:
                out.append(s[copied: m.end()])
            copied = m.end()
            continue
        if token == "<":
            if depth == 0:
                out.append(s[copied:at])
            depth += 1
            copied = m.end()
        elif token == ">" and depth > 0:
            depth -= 1
            copied = m.end()
    if depth == 0:
        out.append(s[copied:])
    return "".join(out)


def _drop_return_type(s: str) -> str:
    """'TfLiteStatus tflite::x::Eval' -> 'tflite::x::Eval'; keeps 'operator new' whole."""
    m = re.search(r"\boperator\b", s)
    if m:
        head, op = s[: m.start()], s[m.start():]
        head_tokens = _split_top_level(head.rstrip())
        qual = head_tokens[-1] if head_tokens and head.rstrip().endswith("::") else ""
        return qual + op
    tokens = _split_top_level(s)
    return tokens[-1] if tokens else s


def _split_top_level(s: str) -> list[str]:
    tokens, depth, cur = [], 0, []
    for c in s:
        if c in "<([{":
            depth += 1
        elif c in ">)]}" and depth > 0:
            depth -= 1
        if c == " " and depth == 0:
            if cur:
                tokens.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if cur:
        tokens.append("".join(cur))
    return tokens


def normalize_function(name: str | None, *, keep_templates: bool = False) -> str:
    """The build- and tool-independent spelling of a function name ('' for none)."""
    if not name:
        return ""
    return _normalize(name[:MAX_NAME], keep_templates)


@lru_cache(maxsize=8192)
def _normalize(name: str, keep_templates: bool) -> str:
    s = name.strip()
    if s in ("??", "<unknown>"):
        return ""
    if s.startswith("<") and s.endswith(">") and " " in s:
        return s  # gdb's markers such as "<signal handler called>"
    s = demangle(s)
    s = _CLONE_BRACKETS.sub("", s)
    s = _ABI_TAGS.sub("", s)
    s = _OFFSET.sub("", s)
    s = _SYMBOL_VERSION.sub("", s)
    s = _CLONE_SUFFIX.sub("", s)
    s = _ANON_NAMESPACE.sub("", s)
    s = _ABSL_INLINE.sub("", s)
    s = _STD_INLINE.sub("std::", s)
    s = _GCC_LAMBDA.sub("{lambda}", s)
    s = _CLANG_LAMBDA.sub("{lambda}", s)
    s = _SPACES.sub(" ", s).strip()
    s = _function_handler_callable(s)
    s = _strip_param_lists(s)
    if not keep_templates:
        s = _strip_templates(s)
    s = _drop_return_type(s.strip())
    s = _SPACES.sub(" ", s).strip()
    return s.strip(":") if s.startswith("::") else s


def short_name(normalized: str) -> str:
    """A name for sentences: 'tensorflow::ThreadPoolDevice::Compute' -> 'ThreadPoolDevice::Compute'."""
    return normalized[len("tensorflow::"):] if normalized.startswith("tensorflow::") else normalized


def basename(path: str | None) -> str:
    """The file name of a path; for a library inside an Android package
    (`/data/app/x/base.apk!libtensorflowlite_jni.so`), the library's."""
    if not path:
        return ""
    return path.rstrip("/").rsplit("/", 1)[-1].rsplit("!", 1)[-1]
