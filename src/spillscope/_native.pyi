"""Type stub of the C accelerator (src/spillscope/_native.c); see spillscope.util.native."""

from typing import Union

Buffer = Union[bytes, bytearray, memoryview]

def deframe(buf: Buffer, end: int = ..., /) -> bytes | None: ...
def canonical(buf: Buffer, /) -> bool: ...
def index_lines(buf: Buffer, end: int, at_eof: bool, fragments: int, max_line: int, base: int, cp: int,
                nbytes: int, newlines: int, /) -> tuple[int, int, int, int, int, int, bytes]: ...
