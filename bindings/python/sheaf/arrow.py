"""A list as Arrow: each snapshot's items become one ``pyarrow.RecordBatch`` (Client.fetch_arrow,
Client.stream_batches).

pyarrow is optional (``pip install sheaf[arrow]``) and imported only when a list is read this way.

How: a pulled snapshot hands over the items it added as one JSON array, the bytes the pages
brought (``sheaf_snapshot.delta_json``). The library reads them into the columns of one Arrow
struct array in a single pass (``sheaf_arrow_from_json``, the GIL released), by the rules of
pyarrow's own JSON reader and with the types the list has so far, and hands them over through
the Arrow C data interface: pyarrow imports them without a copy. So no item is ever a Python
object, the bytes are read once more only by the library's own reader, and a batch is exactly a
snapshot, its pages known, with the list run as ``fetch_all`` runs it (budgets, resume tokens,
Ctrl-C).

Where that reader would read a snapshot otherwise or refuse it (a value that changes a field's
kind, an integer past 64 bits, an item that is not an object, a name given twice), the library
reads nothing and pyarrow's JSON reader reads that snapshot, wrapped as ``{"items":<array>}``,
one JSON line whose single column is a list of structs; it also words the error. A caller's
schema naming a type the library does not build (a timestamp, a 32-bit integer) has pyarrow's
reader read every snapshot, a few MB at a time on its threads. Either way the batches are the
same, but for one thing: pyarrow's reader loses the nulls that open a list whose element type it
learns later in that list (``[null, "a"]`` reads as ``["a"]``, its offsets spanning more values
than there are: apache/arrow#51305, open in pyarrow 21 to 25), and the library keeps them.

One schema for the whole list: the first page that shows a field fixes its type, and later
snapshots are read with the types known so far (``ParseOptions.explicit_schema``), fields not
seen yet inferred (``unexpected_field_behavior="infer"``). A field seen only as null, or a field
that first appears later, is no change: the rows before hold null. Any other change is a
:class:`SchemaError` naming the field and the pages, unless the caller's ``schema`` says what
the field is, because batches already handed out cannot change type afterwards.
Strings stay strings: pyarrow would infer ``timestamp[s]`` from ISO dates (dropping a "Z" and
turning a page of dates and a page of other text into a type change); a caller wanting
timestamps names them in ``schema``.
"""

from __future__ import annotations

import ctypes
import re
from typing import TYPE_CHECKING, Any, List, NamedTuple, Optional, Tuple

from . import _ffi
from .errors import DecodingError, Result, UsageError
from .snapshot import StopReason

if TYPE_CHECKING:  # pragma: no cover - for type checkers only: importing sheaf imports no pyarrow
    import pyarrow

#: A snapshot's items, wrapped into one JSON object on one line (a page's line breaks included:
#: the reader is told values may span lines).
_OPEN = b'{"items":'
_CLOSE = b"}\n"
_WRAPPING = len(_OPEN) + len(_CLOSE)

#: Where pyarrow's JSON reader says a column changed kind: "Column(/items/[]/a/b) changed from
#: number to string in row 0". The path below the wrapper's "/items/[]" is the field.
_CHANGED = re.compile(r"Column\(/items/\[\]((?:/[^)]*)?)\) changed from (\w+) to (\w+)")

#: Where pyarrow says two schemas disagree: "Unable to merge: Field when has incompatible types:
#: list<item: null> vs bool".
_CLASH = re.compile(r"Field (\S+) has incompatible types: (.+) vs (.+)$")

#: Schema metadata of the table fetch_arrow returns: how the list ended (Items.stop_reason and
#: Items.resume_token, which a pyarrow.Table has no room for).
STOP_REASON_KEY = b"sheaf.stop_reason"
RESUME_TOKEN_KEY = b"sheaf.resume_token"

#: The block pyarrow's reader gives each of its threads when lines are read together (at least:
#: a longer line gets a block of its own size), and how many bytes of lines fetch_arrow gathers
#: before reading them.
_BLOCK_BYTES = 1 << 20
_GATHER_BYTES = 4 << 20



def _memory_pool(pa: Any) -> Any:
    """Where pyarrow's JSON reader allocates: the system allocator, not pyarrow's default
    (jemalloc), which keeps the reader threads' freed buffers (P5's peak RSS: 140 MB with it,
    120 MB without)."""
    return pa.system_memory_pool()


class Line(NamedTuple):
    """A snapshot's items (its JSON array, copied once from the library's delta), and where they
    are in the list. Read, they are wrapped as one JSON line (`wrapped`)."""
    items: bytes
    pages: Tuple[int, int]     # the first and last page, counted from 1 in this run
    first_item: int
    end_item: int              # the item after the last

    def parts(self) -> Tuple[bytes, bytes, bytes]:
        """The line's bytes in pieces, to be joined once with other lines' or alone."""
        return _OPEN, self.items, _CLOSE

    @property
    def wrapped(self) -> bytes:
        return b"".join(self.parts())


def require_pyarrow() -> Tuple[Any, Any]:
    """pyarrow and pyarrow.json, or an ImportError that says how to install them."""
    try:
        import pyarrow
        import pyarrow.json
    except ImportError as error:
        raise ImportError("reading a list as Arrow (fetch_arrow, stream_batches) needs pyarrow: "
                          "pip install sheaf[arrow]", name="pyarrow") from error
    return pyarrow, pyarrow.json


class SchemaError(DecodingError):
    """The items do not fit one Arrow schema: a field changes type from one page to another (or
    between items of the same pages), a value does not convert to the type ``schema=`` gives,
    or an item is not a JSON object. The list stops there.

    Attributes:
        field: the field, its nesting with dots and ``[]`` for a list's elements (``"owner.id"``,
            ``"tags[]"``); "" for the item itself; None when pyarrow did not say which.
        pages: the first and last page (counted from 1 in this run) of the snapshot that failed.
        items: for ``fetch_arrow``, a ``pyarrow.Table`` of every row before that snapshot; empty
            for a stream (its batches were yielded).
        resume_token: for ``fetch_arrow``, the token that goes on after those rows.
    """

    def __init__(self, message: str, field: Optional[str], pages: Tuple[int, int]) -> None:
        super().__init__(Result.BAD_PAGE, message)
        self.field = field
        self.pages = pages


class SnapshotBatches:
    """Turns each pulled snapshot into a RecordBatch under the list's one schema."""

    def __init__(self, schema: Optional["pyarrow.Schema"]) -> None:
        self._pa, self._json = require_pyarrow()
        if schema is not None and not isinstance(schema, self._pa.Schema):
            raise UsageError(Result.INVALID_ARGUMENT, f"schema must be a pyarrow.Schema, not {type(schema).__name__}")
        self.given = schema
        self._given_names = set() if schema is None else set(schema.names)
        #: Every field seen so far with its type (null while it held only nulls); the caller's first.
        self.known: "pyarrow.Schema" = schema if schema is not None else self._pa.schema([])
        self._pages_before = 0   # pages of the snapshots already read
        self._items_before = 0
        #: Whether the library reads the snapshots (sheaf_arrow_from_json); False once it says it
        #: does not build a type the caller's schema names (pyarrow's reader reads them all then).
        self.in_library = True

    def batch_of(self, snapshot: _ffi.SnapshotStruct) -> Optional["pyarrow.RecordBatch"]:
        """The rows `snapshot` added, or None when it added none."""
        line = self.take(snapshot)
        return None if line is None else self.read_one(line)

    def take(self, snapshot: _ffi.SnapshotStruct) -> Optional[Line]:
        """The items `snapshot` added, with where they are in the list (the bytes are copied: the
        snapshot's are the library's only until the next pull); None when it added none."""
        pages = (self._pages_before + 1, max(self._pages_before + 1, snapshot.pages))
        self._pages_before = snapshot.pages
        first_item, self._items_before = self._items_before, snapshot.items
        if snapshot.delta_items == 0:
            return None
        return Line(ctypes.string_at(snapshot.delta_json, snapshot.delta_length), pages, first_item, snapshot.items)

    def read_one(self, line: Line) -> "pyarrow.RecordBatch":
        """`line`'s rows under the list's schema so far, which they extend (a SchemaError when
        they do not fit it). The library reads them when it can, else pyarrow's reader."""
        explicit = _definite(self._pa, self._pa.struct(list(self.known)))
        if self.in_library:
            rows = self._read_in_library(line, explicit)
            if rows is not None:
                return self._extend(rows, line)
        wrapped, pages = line.wrapped, line.pages
        try:
            batch = self._read(wrapped, explicit)
            kept = _strings_kept(self._pa, batch.type, explicit)
            if kept != batch.type:   # pyarrow inferred timestamps from new strings: read them as text
                batch = self._read(wrapped, kept)
        except self._pa.ArrowInvalid as error:
            raise self._conflict(wrapped, explicit, error, line) from None
        except self._pa.ArrowNotImplementedError as error:   # a type the JSON reader cannot make
            raise UsageError(Result.INVALID_ARGUMENT, f"schema: {error}") from None
        if not self._pa.types.is_struct(batch.type):
            raise SchemaError(f"the items of {_where(line)} are not JSON objects "
                              f"(they are read as {batch.type}): rows need objects", "", pages)
        return self._extend(self._pa.RecordBatch.from_struct_array(batch), line)

    def _read_in_library(self, line: Line, explicit: "pyarrow.StructType") -> Optional["pyarrow.RecordBatch"]:
        """`line`'s rows as the library reads them in one pass (sheaf_arrow_from_json, the GIL
        released), the types `explicit` gives kept: the batch pyarrow's reader gives. None when the
        library did not read them: a value that reader would read another way or refuse (it
        then reads the line, and words the error), or a type of the caller's schema the library
        does not build."""
        pa = self._pa
        known = _ffi.ArrowSchemaStruct()
        explicit._export_to_c(ctypes.addressof(known))
        schema, array = _ffi.ArrowSchemaStruct(), _ffi.ArrowArrayStruct()
        try:
            result = _ffi.lib.sheaf_arrow_from_json(line.items, len(line.items), ctypes.addressof(known),
                                                    ctypes.byref(schema), ctypes.byref(array))
        finally:
            pa.DataType._import_from_c(ctypes.addressof(known))   # releases what was exported
        if result == Result.UNSUPPORTED:
            self.in_library = False
        if result != Result.OK:
            return None
        return pa.RecordBatch._import_from_c(ctypes.addressof(array), ctypes.addressof(schema))

    def read_together(self, lines: List[Line]) -> Optional[List["pyarrow.RecordBatch"]]:
        """The rows of `lines`, read in one call on pyarrow's threads, when they hold exactly the
        fields the list already has with the types it has (new fields only null): what reading
        them one by one would give. None otherwise, the lines then to be read one by one (which
        types a new field and names a change with its pages)."""
        pa = self._pa
        explicit = _definite(pa, pa.struct(list(self.known)))
        data = b"".join(part for line in lines for part in line.parts())
        parse = self._json.ParseOptions(explicit_schema=pa.schema([pa.field("items", pa.list_(explicit))]),
                                        unexpected_field_behavior="infer",
                                        newlines_in_values=any(b"\n" in line.items for line in lines))
        # A block must hold a whole line; several lines a block, and the blocks read side by side.
        read = self._json.ReadOptions(use_threads=True,
                                      block_size=max(_BLOCK_BYTES, max(len(line.items) for line in lines) + _WRAPPING + 1))
        try:
            table = self._json.read_json(pa.BufferReader(data), read_options=read, parse_options=parse,
                                         memory_pool=_memory_pool(pa))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        rows = table.column(0).type.value_type
        if not pa.types.is_struct(rows) or any(
                explicit.get_field_index(field.name) < 0 and not pa.types.is_null(field.type)
                or explicit.get_field_index(field.name) >= 0 and explicit.field(field.name).type != field.type
                for field in rows):
            return None
        rows_of = [_rows_of(chunk) for chunk in table.column(0).chunks]
        return [self._extend(pa.RecordBatch.from_struct_array(rows)) for rows in rows_of if len(rows)]

    def _extend(self, rows: "pyarrow.RecordBatch", line: Optional[Line] = None) -> "pyarrow.RecordBatch":
        """`rows` with the list's schema extended by their fields, in the order fields were seen
        (a SchemaError naming `line` when a field known only as an empty list or a struct of
        nulls so far comes as another kind)."""
        try:
            self.known = self._pa.unify_schemas([self.known, rows.schema], promote_options="default")
        except (self._pa.ArrowTypeError, self._pa.ArrowInvalid) as error:
            clash = _CLASH.search(str(error))
            field = clash.group(1) if clash else None
            where = _where(line) if line is not None else "a snapshot"
            before = f"{clash.group(2)} in the pages before" if clash else "another type before"
            now = clash.group(3) if clash else str(error)
            raise SchemaError(f"the field {field!r} changes type in {where}: it was {before}, and is {now} there "
                              f"(pass schema= to say what it is)", field, line.pages if line is not None else (0, 0)) from None
        if rows.schema.names != [name for name in self.known.names if name in rows.schema.names]:
            # A field known only as null so far came back last, inferred: put it where it was first seen.
            rows = rows.select([name for name in self.known.names if name in rows.schema.names])
        return rows

    def table(self, batches: List["pyarrow.RecordBatch"], stop_reason: StopReason,
              resume_token: Optional[str]) -> "pyarrow.Table":
        """`batches` as one table under the list's schema (rows of a batch from before a field
        appeared hold null there), with how the list ended in its schema's metadata."""
        pa = self._pa
        if batches:
            table = pa.concat_tables([pa.Table.from_batches([batch]) for batch in batches], promote_options="default")
        else:
            table = self.known.empty_table()
        metadata = dict(self.given.metadata or {}) if self.given is not None else {}
        metadata[STOP_REASON_KEY] = stop_reason.name.encode("ascii")
        if resume_token is not None:
            metadata[RESUME_TOKEN_KEY] = resume_token.encode("ascii")
        return table.replace_schema_metadata(metadata)

    def _read(self, wrapped: bytes, items: "pyarrow.StructType", unexpected: str = "infer") -> "pyarrow.Array":
        """The wrapped snapshot read with `items` as the known part of an item's type: the
        flattened values of its one row."""
        pa = self._pa
        parse = self._json.ParseOptions(explicit_schema=pa.schema([pa.field("items", pa.list_(items))]),
                                        unexpected_field_behavior=unexpected, newlines_in_values=True)
        # One block holds the whole line: one chunk, and a single thread (a line cannot be split).
        read = self._json.ReadOptions(use_threads=False, block_size=len(wrapped) + 1)
        table = self._json.read_json(pa.BufferReader(wrapped), read_options=read, parse_options=parse,
                                     memory_pool=_memory_pool(pa))
        return _rows_of(table.column(0).chunk(0))

    def _conflict(self, wrapped: bytes, explicit: "pyarrow.StructType", error: Exception, line: Line) -> SchemaError:
        """The SchemaError for a snapshot pyarrow refused: which field, what it was, what it is."""
        pages = line.pages
        where = _where(line)
        detail = str(error).replace("JSON parse error: ", "")
        changed = _CHANGED.search(detail)
        field = _field_name(changed.group(1)) if changed else self._culprit(wrapped, explicit)
        if field == "":
            return SchemaError(f"the items of {where} are not all JSON objects: rows need objects ({detail})", "", pages)
        if field is None:
            return SchemaError(f"the items of {where} do not fit the schema: {detail}", None, pages)
        before = _type_at(self._pa, explicit, field)
        now = f"a {changed.group(3)}" if changed else detail.split("couldn't parse:")[-1].strip()
        if field.split(".")[0].split("[")[0] in self._given_names:
            message = f"the field {field!r} of {where} cannot be read as the schema's {before}: it holds {now}"
        elif before is not None:
            message = (f"the field {field!r} changes type in {where}: it was {before} in the pages before, "
                       f"and holds {now} there (pass schema= to say what it is)")
        else:
            message = (f"the field {field!r} changes type within {where}: from a {changed.group(2) if changed else '?'} "
                       f"to {now} (pass schema= to say what it is)")
        return SchemaError(message, field, pages)

    def _culprit(self, wrapped: bytes, explicit: Any, wrap: Any = None, name: str = "") -> Optional[str]:
        """For a refusal that names no column ("Failed to convert JSON to int64, couldn't
        parse:1.5"): the innermost known field that fails when read alone, other fields ignored
        (only on a failure's path). `wrap` nests a struct of one field where `name` is."""
        pa = self._pa
        wrap = wrap or (lambda inner: inner)
        for field in explicit:
            try:
                self._read(wrapped, wrap(pa.struct([field])), unexpected="ignore")
                continue
            except pa.ArrowInvalid as error:
                changed = _CHANGED.search(str(error))
                if changed:
                    return _field_name(changed.group(1))
            path = f"{name}.{field.name}" if name else field.name
            inner, nest = field.type, (lambda t, field=field: wrap(pa.struct([field.with_type(t)])))
            if (pa.types.is_list(inner) or pa.types.is_large_list(inner)) and pa.types.is_struct(inner.value_type):
                path += "[]"
                nest = (lambda t, field=field: wrap(pa.struct([field.with_type(
                    _list_like(pa, field.type, field.type.value_field.with_type(t)))])))
                inner = inner.value_type
            if pa.types.is_struct(inner):
                return self._culprit(wrapped, inner, nest, path) or path
            return path
        return None


class GatheredRows:
    """fetch_arrow's reading: a list's snapshots as rows, their lines gathered and read a few MB
    at a time on pyarrow's threads (one call of pyarrow's reader per snapshot costs more than
    the reading, and keeps to one thread) while the library goes on fetching. The rows and the
    schema are what reading each snapshot alone gives (SnapshotBatches.read_together says when
    that holds; otherwise the gathered lines are read one by one)."""

    def __init__(self, of: SnapshotBatches) -> None:
        self.of = of
        self.batches: List["pyarrow.RecordBatch"] = []
        self._lines: List[Tuple[Line, Optional[str]]] = []
        self._bytes = 0

    def add(self, line: Optional[Line], resume_before: Optional[str]) -> None:
        """Takes a snapshot's line (None: it added no item); `resume_before` goes on before it."""
        if line is None:
            return
        if self.of.in_library and not self._lines:
            try:
                self.batches.append(self.of.read_one(line))
            except SchemaError as error:
                error.resume_token = resume_before
                raise
            return
        self._lines.append((line, resume_before))
        self._bytes += len(line.items)
        # The first rows fix the schema: read them at once, alone.
        if self._bytes >= _GATHER_BYTES or not self.of.known:
            self.flush()

    def flush(self) -> None:
        """Reads the lines gathered so far. A SchemaError carries the resume token that goes on
        before the snapshot it names; `batches` then holds every row before that snapshot."""
        lines, self._lines, self._bytes = self._lines, [], 0
        together = self.of.read_together([line for line, _ in lines]) if len(lines) > 1 else None
        if together is not None:
            self.batches += together
            return
        for line, resume_before in lines:
            try:
                self.batches.append(self.of.read_one(line))
            except SchemaError as error:
                error.resume_token = resume_before
                raise


def _rows_of(lines: "pyarrow.ListArray") -> "pyarrow.Array":
    """The items of the lines the JSON reader read (a list per line: none of them null), one
    after the other: the list's values between its first and last offset. (``flatten()`` gives
    the same, but imports ``pyarrow.compute``: 70 ms on a list's first read in a process.)"""
    first, end = lines.offsets[0].as_py(), lines.offsets[-1].as_py()
    return lines.values.slice(first, end - first)


def _where(line: Line) -> str:
    pages, first_item, end_item = line.pages, line.first_item, line.end_item
    span = f"page {pages[0]}" if pages[0] == pages[1] else f"pages {pages[0]} to {pages[1]}"
    items = f"item {first_item}" if end_item - first_item == 1 else f"items {first_item} to {end_item - 1}"
    return f"{span} ({items})"


def _field_name(path: str) -> str:
    """pyarrow's column path below an item ("/owner/id", "/tags/[]") as a field name
    ("owner.id", "tags[]"); "" for the item itself."""
    name = ""
    for part in path.split("/")[1:]:
        name += "[]" if part == "[]" else (f".{part}" if name else part)
    return name


def _type_at(pa: Any, items: Any, field: str) -> Any:
    """The type `field` (as _field_name writes it) has in the struct `items`, or None."""
    current = items
    for part in re.findall(r"\[\]|[^.\[\]]+", field):
        if part == "[]" and (pa.types.is_list(current) or pa.types.is_large_list(current)):
            current = current.value_type
        elif pa.types.is_struct(current) and current.get_field_index(part) >= 0:
            current = current.field(part).type
        else:
            return None
    return current


def _definite(pa: Any, value_type: Any) -> Any:
    """`value_type` without the parts known only as null (for a struct, a struct without those
    fields), or None when nothing of it is known: what a snapshot is read with, so that a field
    null so far is inferred again (an explicit null type refuses any other value)."""
    if pa.types.is_null(value_type):
        return None
    if pa.types.is_struct(value_type):
        fields = []
        for field in value_type:
            definite = _definite(pa, field.type)
            if definite is not None:
                fields.append(field.with_type(definite))
        return pa.struct(fields)
    if pa.types.is_list(value_type) or pa.types.is_large_list(value_type):
        item = _definite(pa, value_type.value_type)
        return None if item is None else _list_like(pa, value_type, value_type.value_field.with_type(item))
    return value_type


def _strings_kept(pa: Any, read: Any, explicit: Any) -> Any:
    """`read` (the type a snapshot was read as) with every timestamp pyarrow inferred (one not in
    `explicit`, the type it was told) turned back into a string."""
    if explicit is None:   # inferred all the way down
        if pa.types.is_timestamp(read):
            return pa.string()
        explicit = pa.null()
    if pa.types.is_struct(read):
        known = explicit if pa.types.is_struct(explicit) else pa.struct([])
        return pa.struct([field.with_type(_strings_kept(pa, field.type, known.field(field.name).type
                                                         if known.get_field_index(field.name) >= 0 else None))
                          for field in read])
    if pa.types.is_list(read) or pa.types.is_large_list(read):
        item = explicit.value_type if pa.types.is_list(explicit) or pa.types.is_large_list(explicit) else None
        return _list_like(pa, read, read.value_field.with_type(_strings_kept(pa, read.value_type, item)))
    return read


def _list_like(pa: Any, like: Any, value_field: Any) -> Any:
    """A list type of the same kind as `like` (list or large list) with `value_field`."""
    return pa.large_list(value_field) if pa.types.is_large_list(like) else pa.list_(value_field)


__all__ = ["SchemaError", "require_pyarrow"]
