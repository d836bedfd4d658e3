"""A reader for the text of one ``.proto`` file (proto2 or proto3) into a FileDescriptorProto, so a Protocol
Buffer schema compiles at run time without protoc.

Supported: ``syntax``, ``package``, messages (nested too), enums (``allow_alias`` honoured), fields with
``optional``/``required``/``repeated`` as the syntax allows (proto3 ``optional`` gets its synthetic oneof),
every scalar type, message and enum references (resolved by the descriptor pool, relative names included),
``map<K, V>``, ``oneof``, ``reserved`` ranges and names, field options ``default`` (proto2), ``packed``,
``deprecated`` and ``json_name``, and ``option`` statements of the file and of messages (accepted, ignored:
they do not change what a message may hold). Refused with INVALID_ARGUMENT naming the construct: ``import``,
``service``, ``rpc``, ``extend``, ``extensions``, ``group``, ``edition``, and any other field option.

The text is data: nothing in it is read from a file or the network (no ``import``; options are skipped, never
resolved), messages nest at most 32 deep and an enum holds at most MAX_ENUM_VALUES values; the tokenizer's
expression cannot backtrack past the token it fails on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from google.protobuf import descriptor_pb2

from chalicelib.core.schemas.invalid import DefinitionInvalid
from chalicelib.core.schemas.limits import MAX_ENUM_VALUES

FDP = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    "double": FDP.TYPE_DOUBLE, "float": FDP.TYPE_FLOAT, "int64": FDP.TYPE_INT64, "uint64": FDP.TYPE_UINT64,
    "int32": FDP.TYPE_INT32, "fixed64": FDP.TYPE_FIXED64, "fixed32": FDP.TYPE_FIXED32, "bool": FDP.TYPE_BOOL,
    "string": FDP.TYPE_STRING, "bytes": FDP.TYPE_BYTES, "uint32": FDP.TYPE_UINT32, "sfixed32": FDP.TYPE_SFIXED32,
    "sfixed64": FDP.TYPE_SFIXED64, "sint32": FDP.TYPE_SINT32, "sint64": FDP.TYPE_SINT64,
}
LABELS = {"optional": FDP.LABEL_OPTIONAL, "required": FDP.LABEL_REQUIRED, "repeated": FDP.LABEL_REPEATED}
UNSUPPORTED = {"import", "service", "rpc", "extend", "extensions", "group", "edition", "stream"}
_FIELD_OPTIONS = {"default", "packed", "deprecated", "json_name"}
_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>-?(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))
  | (?P<ident>\.?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<symbol>[{}\[\]()<>;=,:-])
""", re.VERBOSE | re.DOTALL)
_MAX_DEPTH = 32


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    line: int


def tokenize(text: str) -> list[Token]:
    tokens, pos, line = [], 0, 1
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise DefinitionInvalid(f"line {line}: unexpected character {text[pos]!r}")
        kind = match.lastgroup or ""
        if kind != "space":
            tokens.append(Token(kind, match.group(), line))
        line += match.group().count("\n")
        pos = match.end()
    return tokens


def _unquote(token: Token) -> str:
    if token.kind != "string":
        raise DefinitionInvalid(f"line {token.line}: expected a string, found {token.text!r}")
    try:
        return token.text[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        raise DefinitionInvalid(f"line {token.line}: bad escape in {token.text[:40]}") from None


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


class ProtoReader:
    """Recursive descent over the tokens; each ``_read_*`` consumes one construct."""

    def __init__(self, text: str) -> None:
        self.tokens = tokenize(text)
        self.pos = 0
        self.file = descriptor_pb2.FileDescriptorProto(name="schema.proto", syntax="proto2")

    # -- tokens ------------------------------------------------------------------------------
    def _peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _next(self) -> Token:
        token = self._peek()
        if token is None:
            last = self.tokens[-1].line if self.tokens else 1
            raise DefinitionInvalid(f"line {last}: unexpected end of the definition")
        self.pos += 1
        return token

    def _expect(self, text: str) -> Token:
        token = self._next()
        if token.text != text:
            raise DefinitionInvalid(f"line {token.line}: expected {text!r}, found {token.text!r}")
        return token

    def _ident(self) -> Token:
        token = self._next()
        if token.kind != "ident":
            raise DefinitionInvalid(f"line {token.line}: expected a name, found {token.text!r}")
        if token.text in UNSUPPORTED:
            raise DefinitionInvalid(f"line {token.line}: {token.text!r} is not supported in a schema")
        return token

    def _int(self) -> int:
        token = self._next()
        try:
            return int(token.text, 0)
        except ValueError:
            raise DefinitionInvalid(f"line {token.line}: expected an integer, found {token.text!r}") from None

    def _skip_if(self, text: str) -> bool:
        token = self._peek()
        if token is not None and token.text == text and token.kind != "string":
            self.pos += 1
            return True
        return False

    # -- the file ----------------------------------------------------------------------------
    def read(self) -> descriptor_pb2.FileDescriptorProto:
        if self._skip_if("syntax"):
            self._expect("=")
            syntax = _unquote(self._next())
            if syntax not in ("proto2", "proto3"):
                raise DefinitionInvalid(f"syntax {syntax!r} is not supported (proto2 or proto3)")
            self.file.syntax = syntax
            self._expect(";")
        while (token := self._peek()) is not None:
            if self._skip_if(";"):
                continue
            word = self._ident().text
            if word == "package":
                self.file.package = self._ident().text
                self._expect(";")
            elif word == "option":
                self._skip_option()
            elif word == "message":
                self._read_message(self.file.message_type.add(), 0)
            elif word == "enum":
                self._read_enum(self.file.enum_type.add())
            else:
                raise DefinitionInvalid(f"line {token.line}: {word!r} is not supported at the top of a schema")
        return self.file

    def _skip_option(self) -> None:
        """``option name = value;`` (a parenthesised custom option name included): accepted and ignored."""
        while (token := self._next()).text != ";":
            if token.text in ("{", "}"):
                raise DefinitionInvalid(f"line {token.line}: aggregate option values are not supported")

    # -- messages ----------------------------------------------------------------------------
    def _read_message(self, msg: descriptor_pb2.DescriptorProto, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise DefinitionInvalid("messages are nested too deeply")
        msg.name = self._ident().text
        self._expect("{")
        while not self._skip_if("}"):
            self._read_member(msg, depth)
        self._add_synthetic_oneofs(msg)

    def _read_member(self, msg: descriptor_pb2.DescriptorProto, depth: int) -> None:
        if self._skip_if(";"):
            return
        token = self._peek() or self._next()  # at the end, _next reports the missing '}'
        if token.kind == "ident" and token.text in UNSUPPORTED:
            raise DefinitionInvalid(f"line {token.line}: {token.text!r} is not supported in a schema")
        if self._skip_if("message"):
            self._read_message(msg.nested_type.add(), depth + 1)
        elif self._skip_if("enum"):
            self._read_enum(msg.enum_type.add())
        elif self._skip_if("option"):
            self._skip_option()
        elif self._skip_if("reserved"):
            self._read_reserved(msg)
        elif self._skip_if("oneof"):
            self._read_oneof(msg)
        elif self._skip_if("map"):
            self._read_map(msg)
        else:
            self._read_field(msg, msg.field.add(), oneof=None)

    def _read_field(self, msg: descriptor_pb2.DescriptorProto, field: descriptor_pb2.FieldDescriptorProto,
                    oneof: int | None) -> None:
        first = self._ident()
        label = LABELS.get(first.text) if oneof is None else None
        type_token = self._ident() if label is not None else first
        self._set_label(field, label, first)
        self._set_type(field, type_token.text)
        field.name = self._ident().text
        self._expect("=")
        field.number = self._int()
        if oneof is not None:
            field.oneof_index = oneof
        if self._skip_if("["):
            self._read_field_options(field)
        self._expect(";")

    def _set_label(self, field: descriptor_pb2.FieldDescriptorProto, label: int | None, token: Token) -> None:
        """No label means optional (proto3's implicit presence, or a field of a oneof)."""
        proto3 = self.file.syntax == "proto3"
        if label == FDP.LABEL_REQUIRED and proto3:
            raise DefinitionInvalid(f"line {token.line}: 'required' is not allowed in proto3")
        if label == FDP.LABEL_OPTIONAL and proto3:
            field.proto3_optional = True
        field.label = label if label is not None else FDP.LABEL_OPTIONAL

    @staticmethod
    def _set_type(field: descriptor_pb2.FieldDescriptorProto, name: str) -> None:
        if name in SCALARS:
            field.type = SCALARS[name]
        else:
            field.type_name = name  # message or enum: the descriptor pool resolves the name and its kind

    def _read_field_options(self, field: descriptor_pb2.FieldDescriptorProto) -> None:
        while True:
            name = self._ident()
            self._expect("=")
            value = self._next()
            if name.text not in _FIELD_OPTIONS:
                raise DefinitionInvalid(f"line {name.line}: the field option {name.text!r} is not supported")
            if name.text == "default":
                if self.file.syntax == "proto3":
                    raise DefinitionInvalid(f"line {name.line}: default values are not allowed in proto3")
                field.default_value = _unquote(value) if value.kind == "string" else value.text
            elif name.text == "json_name":
                field.json_name = _unquote(value)
            else:
                setattr(field.options, name.text, value.text == "true")
            if not self._skip_if(","):
                break
        self._expect("]")

    def _read_map(self, msg: descriptor_pb2.DescriptorProto) -> None:
        self._expect("<")
        key = self._ident().text
        self._expect(",")
        value = self._ident().text
        self._expect(">")
        field = msg.field.add(label=FDP.LABEL_REPEATED, type=FDP.TYPE_MESSAGE)
        field.name = self._ident().text
        self._expect("=")
        field.number = self._int()
        if self._skip_if("["):
            self._read_field_options(field)
        self._expect(";")
        entry = msg.nested_type.add(name=_camel(field.name) + "Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, label=FDP.LABEL_OPTIONAL, type=SCALARS.get(key, FDP.TYPE_STRING))
        value_field = entry.field.add(name="value", number=2, label=FDP.LABEL_OPTIONAL)
        self._set_type(value_field, value)
        if key not in SCALARS:
            raise DefinitionInvalid(f"map keys must be a scalar type, not {key!r}")
        field.type_name = entry.name

    def _read_oneof(self, msg: descriptor_pb2.DescriptorProto) -> None:
        index = len(msg.oneof_decl)
        msg.oneof_decl.add(name=self._ident().text)
        self._expect("{")
        while not self._skip_if("}"):
            if self._skip_if(";"):
                continue
            if self._skip_if("option"):
                self._skip_option()
                continue
            field = msg.field.add(label=FDP.LABEL_OPTIONAL, oneof_index=index)
            self._read_field(msg, field, oneof=index)

    def _read_reserved(self, msg: descriptor_pb2.DescriptorProto) -> None:
        while True:
            token = self._peek()
            if token is not None and token.kind == "string":
                msg.reserved_name.append(_unquote(self._next()))
            else:
                start = self._int()
                end = start
                if self._skip_if("to"):
                    end = 536870911 if self._skip_if("max") else self._int()
                msg.reserved_range.add(start=start, end=end + 1)
            if not self._skip_if(","):
                break
        self._expect(";")

    @staticmethod
    def _add_synthetic_oneofs(msg: descriptor_pb2.DescriptorProto) -> None:
        """proto3 ``optional`` fields each get a oneof of their own, after the declared ones."""
        for field in msg.field:
            if field.proto3_optional:
                field.oneof_index = len(msg.oneof_decl)
                msg.oneof_decl.add(name=f"_{field.name}")

    # -- enums -------------------------------------------------------------------------------
    def _read_enum(self, enum: descriptor_pb2.EnumDescriptorProto) -> None:
        enum.name = self._ident().text
        self._expect("{")
        while not self._skip_if("}"):
            if self._skip_if(";"):
                continue
            if self._skip_if("option"):
                name = self._ident().text
                self._expect("=")
                value = self._next().text
                self._expect(";")
                if name == "allow_alias":
                    enum.options.allow_alias = value == "true"
                continue
            if self._skip_if("reserved"):
                self._skip_option()
                continue
            if len(enum.value) == MAX_ENUM_VALUES:
                raise DefinitionInvalid(f"enum {enum.name}: an enum may hold at most {MAX_ENUM_VALUES} values")
            value = enum.value.add(name=self._ident().text)
            self._expect("=")
            value.number = self._int()
            if self._skip_if("["):
                while self._next().text != "]":
                    pass
            self._expect(";")


def read_proto(text: str) -> descriptor_pb2.FileDescriptorProto:
    return ProtoReader(text).read()
