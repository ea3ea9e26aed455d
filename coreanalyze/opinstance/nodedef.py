"""The running kernel's node definition: its attributes (NodeDef.attr) and its op's signature
(OpDef: input argument names, attribute names and kinds), read from protobuf objects in memory.

Reached through OpKernel::props_ (a shared_ptr<const NodeProperties>). Protobuf keeps string
fields as tagged pointers (two low bits), repeated messages as a Rep of element pointers (since
4.23 one element may stand in its place), maps as a table of bucket lists; which of these
shapes and every offset come from the layout data.
Only the attribute kinds a reproducer can spell are decoded (int, float, bool, type, string);
any other kind is reported as unreadable, never guessed.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

from coreanalyze.opinstance.layouts import dtypes

MAX_ARGS = 256
MAX_ATTRS = 256
MAX_BUCKETS = 1 << 16
MAX_CHAIN = 256
ATTR_NAME_TEXT = 256


class Unreadable(Exception):
    """A part of the node definition that could not be read (or has a kind not decoded)."""


@dataclass(frozen=True)
class ArgDef:
    name: str
    type_attr: str
    is_list: bool  # number_attr or type_list_attr: a list of tensors


@dataclass
class NodeDefinition:
    input_args: list[ArgDef] = field(default_factory=list)
    attr_kinds: dict[str, str] = field(default_factory=dict)  # OpDef attr name -> "int", "float", ...
    attrs: dict[str, object] = field(default_factory=dict)  # NodeDef attr name -> decoded value
    unreadable: dict[str, str] = field(default_factory=dict)  # attr name -> why


class NodeDefReader:
    def __init__(self, reader) -> None:
        self.r = reader  # opinstance.tensorflow._Reader
        self.lay = reader.layout

    def pstring(self, address: int, what: str, allow_empty: bool = True) -> str:
        """A protobuf string field (ArenaStringPtr) at address."""
        pointer = self.r.u64(address) & ~3
        if not pointer:
            raise Unreadable(f"{what}: null string")
        return self.r.std_string(pointer, what, allow_empty=allow_empty)

    def repeated(self, address: int, limit: int) -> list[int]:
        """Element pointers of a RepeatedPtrField at address."""
        rp = self.lay["repeated_ptr"]
        size = struct.unpack("<i", self.r.bytes(address + int(rp["size"]), 4))[0]
        if not 0 <= size <= limit:
            raise Unreadable(f"a repeated field of {size} elements")
        if size == 0:
            return []
        if "rep" in rp:  # older protobuf: always a Rep*
            rep = self.r.u64(address + int(rp["rep"]))
        else:
            tagged = self.r.u64(address + int(rp["elements"]))
            if not tagged & 1:  # one element kept in place of the Rep
                if size != 1:
                    raise Unreadable("a repeated field's size disagrees with its storage")
                return [tagged]
            rep = tagged - 1
        if not rep:
            raise Unreadable("a repeated field without storage")
        data = self.r.bytes(rep + int(rp["rep_elements"]), 8 * size)
        return list(struct.unpack(f"<{size}Q", data))

    def map_entries(self, address: int) -> list[tuple[str, int]]:
        """(key, value address) of a protobuf Map<string, V> at address."""
        pm = self.lay["proto_map"]
        index_format = "<I" if int(pm["index_size"]) == 4 else "<Q"
        buckets = struct.unpack(index_format, self.r.bytes(address + int(pm["num_buckets"]), int(pm["index_size"])))[0]
        if not 0 < buckets <= MAX_BUCKETS:
            raise Unreadable(f"a map of {buckets} buckets")
        table = self.r.u64(address + int(pm["table"]))
        heads = struct.unpack(f"<{buckets}Q", self.r.bytes(table, 8 * buckets))
        entries = []
        for b, head in enumerate(heads):
            # A bucket of many colliding keys becomes a tree: tagged by bit 0 (protobuf 5), or
            # two neighbouring slots with one pointer (before). Attribute maps are far too
            # small for that, so such a bucket means this is no attribute map.
            if head & 1 or (pm["tree"] == "paired" and head and heads[b ^ 1] == head):
                raise Unreadable("a map bucket that is not a list")
            node, hops = head, 0
            while node:
                hops += 1
                if hops > MAX_CHAIN or len(entries) > MAX_ATTRS:
                    raise Unreadable("a map bucket list does not end")
                key = self.r.std_string(node + int(pm["key"]), "attribute name")
                entries.append((key, node + int(pm["value"])))
                node = self.r.u64(node + int(pm["next"]))
        return entries

    def attr_value(self, address: int, kind: str) -> object:
        av = self.lay["attr_value"]
        case = struct.unpack("<I", self.r.bytes(address + int(av["oneof_case"]), 4))[0]
        value_at = address + int(av["value"])
        wanted = {"int": "case_i", "float": "case_f", "bool": "case_b", "type": "case_type", "string": "case_s"}.get(kind)
        if wanted is None:
            raise Unreadable(f"attribute kind {kind} is not decoded")
        if case != int(av[wanted]):
            raise Unreadable(f"the value's case {case} is not a {kind}")
        if kind == "int":
            return struct.unpack("<q", self.r.bytes(value_at, 8))[0]
        if kind == "float":
            value = struct.unpack("<f", self.r.bytes(value_at, 4))[0]
            if not math.isfinite(value):
                raise Unreadable("a float attribute that is not finite")
            return value
        if kind == "bool":
            raw = self.r.bytes(value_at, 1)[0]
            if raw > 1:
                raise Unreadable("a bool attribute that is not 0 or 1")
            return bool(raw)
        if kind == "type":
            number = struct.unpack("<i", self.r.bytes(value_at, 4))[0]
            dtype = dtypes().get(number)
            if dtype is None:
                raise Unreadable(f"type attribute {number} is no dtype")
            return dtype
        return self.pstring(value_at, "string attribute")

    def read(self, kernel: int) -> NodeDefinition:
        lay = self.lay
        props = self.r.u64(kernel + lay.offset("op_kernel_props", "props"))
        if not props:
            raise Unreadable("the kernel has no node properties")
        op_def = self.r.u64(props + lay.offset("node_properties", "op_def"))
        node_def = props + lay.offset("node_properties", "node_def")
        if not op_def:
            raise Unreadable("the node has no op definition")
        definition = NodeDefinition()
        ad, od = lay["arg_def"], lay["op_def"]
        for arg in self.repeated(op_def + int(od["input_arg"]), MAX_ARGS):
            definition.input_args.append(
                ArgDef(
                    name=self.pstring(arg + int(ad["name"]), "input name", allow_empty=False),
                    type_attr=self.pstring(arg + int(ad["type_attr"]), "type attribute"),
                    is_list=bool(self.pstring(arg + int(ad["number_attr"]), "number attribute")
                                 or self.pstring(arg + int(ad["type_list_attr"]), "type list attribute")),
                )
            )
        at = lay["attr_def"]
        for attr in self.repeated(op_def + int(od["attr"]), MAX_ATTRS):
            name = self.pstring(attr + int(at["name"]), "attribute name", allow_empty=False)
            definition.attr_kinds[name] = self.pstring(attr + int(at["type"]), "attribute kind", allow_empty=False)
        for name, value_at in self.map_entries(node_def + lay.offset("node_def", "attr")):
            kind = definition.attr_kinds.get(name)
            if kind is None:
                continue  # runtime annotations (_class, _XlaCompile, ...) are not the op's attributes
            try:
                definition.attrs[name] = self.attr_value(value_at, kind)
            except Unreadable as e:
                definition.unreadable[name] = str(e)
        return definition
