"""Reading LSP frames so that one malformed message costs only itself.

pygls's reader expects every frame to start with `Content-Length`. A frame without it (a
client bug, a stray write to the server's stdin) is skipped header line by header line, but
its body has no line end of its own, so the next frame's `Content-Length` line is read glued
to it, fails to match, and from then on every frame is misread: the server goes deaf.

This reader finds `Content-Length: N` anywhere in a header line (the header ends the line:
a JSON body never holds a raw line break, so the match cannot come from inside one), so it is
back in step at the next well-formed frame; what it skipped is logged. An absurd length is
skipped rather than allocated, and a body that is not JSON is logged and dropped, as pygls does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading

from pygls.exceptions import JsonRpcException

CONTENT_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d+)[ \t]*\r?\n\Z", re.IGNORECASE)
OTHER_HEADER = re.compile(rb"[A-Za-z][A-Za-z0-9-]*:[^\r\n]*\r?\n\Z")
MAX_MESSAGE_BYTES = 256 * 2**20  # a 100k-line document is a few MB
SKIP_CHUNK = 2**20

log = logging.getLogger(__name__)


async def read_messages(stop_event: threading.Event, reader, protocol, error_handler=None) -> None:
    """pygls.io_.run_async's loop, resynchronising after a malformed frame."""
    length: int | None = None
    while not stop_event.is_set():
        line = await reader.readline()
        if not line:
            break
        header = CONTENT_LENGTH.search(line)
        if header is not None:
            if header.start() or length is not None:
                log.warning("tcl lsp: skipped %d bytes of a malformed message (no Content-Length before it)",
                            header.start())
            length = int(header.group(1))
            continue
        if line.strip():
            if not OTHER_HEADER.fullmatch(line):
                log.warning("tcl lsp: skipped a malformed header line of %d bytes", len(line))
            continue
        if length is None:
            continue  # a blank line with no length before it: nothing to read
        size, length = length, None
        if size > MAX_MESSAGE_BYTES:
            log.warning("tcl lsp: skipped a message of %d bytes (more than %d)", size, MAX_MESSAGE_BYTES)
            if not await _skip(reader, size):
                break
            continue
        body = await reader.readexactly(size)
        if not body:
            break
        try:
            message = json.loads(body, object_hook=protocol.structure_message)
            protocol.handle_message(message)
        except Exception as exc:
            log.exception("tcl lsp: unable to handle a message")
            if error_handler is not None:
                error_handler(exc, JsonRpcException)


async def _skip(reader, size: int) -> bool:
    while size > 0:
        chunk = await reader.readexactly(min(size, SKIP_CHUNK))
        if not chunk:
            return False
        size -= len(chunk)
    return True


def serve_stdio(server, stdin, stdout) -> None:
    """pygls's LanguageServer.start_io for stdin/stdout, with read_messages as the reader."""
    from threading import Event

    from pygls.io_ import StdinAsyncReader, StdoutWriter

    server._stop_event = Event()
    reader = StdinAsyncReader(stdin, server.thread_pool)
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        asyncio.run(read_messages(server._stop_event, reader, server.protocol, server.report_server_error))
    except BrokenPipeError:
        log.error("tcl lsp: the connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
