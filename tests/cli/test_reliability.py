#!/usr/bin/python3
"""attnscope-cli reliability regressions (docs/DESIGN.md §2.4, §2.5, §3.5). Each test fails on the
code before the reliability fix and passes after it:

- pytorch: a workspace file name with a newline (or a carriage return, or bytes that are not UTF-8)
  cannot end the script's first comment and run code; the script still runs (exit 0).
- FIFOs: `trace`/`export` of a named pipe fail at once with one `error:` line (they used to block
  in open() forever; the 10 s timeout is the failure).
- Bad PNGs (signature + garbage, truncated IHDR, bad CRC, truncated in the pixel data): exit 2 and
  exactly one stderr line, ours — libpng used to print its own warnings and errors as well.
- A 30000 × 30000 PNG whose workspace chunk follows the pixels: read in < 5 s and < 200 MB peak RSS
  (every pixel used to be decoded: 900 MB). A workspace chunk over 8 MB (libpng's old cap) is read;
  one over 64 MiB is refused with a size message.
- export's atomic writes: through a symlink (the link stays, its target gets the content), keeping a
  file's mode (0600 stays 0600), no temporary file left behind, and failures (the folder is a
  file, the target is a directory, a write that fails half-way under RLIMIT_FSIZE, a read-only
  folder unless root) leave the old file intact with one `error:` line.

Usage: test_reliability.py CLI_PATH ASSETS_DIR   (run with Debian's /usr/bin/python3: torch)
"""
import json
import os
import re
import resource
import secrets
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

CLI = ASSETS = None
PYTHON = "/usr/bin/python3"
FIFO_TIMEOUT_S = 10.0  # "fails within a few seconds"; the old code blocked forever

BOOK_TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
BOOK_EMBEDDINGS = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                   [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]
WORKSPACE = {"format": "attnscope-workspace", "version": 1, "tokens": BOOK_TOKENS,
             "embeddings": BOOK_EMBEDDINGS,
             "model": {"variant": "multihead", "d_out": 2, "num_heads": 2, "seed": 123},
             "view": {}}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
KEY = b"attnscope-workspace"


def run_cli(args, timeout=30, cwd=None, preexec_fn=None, prefix=()):
    env = dict(os.environ, ATTNSCOPE_ASSETS=ASSETS)
    start = time.monotonic()
    p = subprocess.run([*prefix, CLI, *args], capture_output=True, timeout=timeout, env=env, cwd=cwd,
                       preexec_fn=preexec_fn)
    return p, time.monotonic() - start


def text(b):
    return b.decode("utf-8", "replace")


def workspace_text(ws=None, pad=0):
    """The workspace as JSON text, optionally followed by `pad` spaces (still one valid document)."""
    return (json.dumps(ws or WORKSPACE) + " " * pad).encode()


# ---- PNG files written by hand (no PIL): chunks, CRCs, a zlib stream of zeros -------------------

def chunk(kind, data, bad_crc=False):
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    if bad_crc:
        crc ^= 0xDEADBEEF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def ihdr(width, height, colour_type):  # 8 bits, deflate, filter 0, no interlace
    return chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0))


def ztxt(key, value, level=9):
    return chunk(b"zTXt", key + b"\0\0" + zlib.compress(value, level))


def tiny_png(before=(), after=(), bad_ihdr_crc=False):
    """A 1 × 1 RGB image with extra chunks before and after its IDAT."""
    raw = b"\0" + b"\x10\x20\x30"
    head = PNG_SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0), bad_ihdr_crc)
    return head + b"".join(before) + chunk(b"IDAT", zlib.compress(raw)) + b"".join(after) + chunk(b"IEND", b"")


def zeros_zlib(blocks, block_len):
    """A zlib stream of blocks × block_len zero bytes, built in a fraction of a second: one block
    compressed up to a full flush (byte-aligned, dictionary reset) is the same bytes every time, so
    it is repeated; then an empty final block and the Adler-32 of n zeros ((n mod 65521) << 16 | 1)."""
    block = bytes(block_len)
    c = zlib.compressobj(9)
    first = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    assert first[2:] == again, "zlib did not repeat itself after a full flush"
    n = blocks * block_len
    return first + again * (blocks - 1) + b"\x03\x00" + struct.pack(">I", ((n % 65521) << 16) | 1)


def huge_grey_png(side, workspace):
    """side × side 8-bit grey, all black, one IDAT, the workspace zTXt after the pixels."""
    rows_per_block = 1000
    assert side % rows_per_block == 0
    idat = zeros_zlib(side // rows_per_block, (side + 1) * rows_per_block)  # filter byte + pixels per row
    return (PNG_SIGNATURE + ihdr(side, side, 0) + chunk(b"IDAT", idat) + ztxt(KEY, workspace)
            + chunk(b"IEND", b""))


def max_rss_kb(stderr):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(m.group(1)) if m else None


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp_obj = tempfile.TemporaryDirectory(prefix="attnscope_reliability_")
        self.tmp = self.tmp_obj.name

    def tearDown(self):
        # A test may leave a read-only folder behind: make everything writable before removing it.
        for root, dirs, _ in os.walk(self.tmp):
            for d in dirs:
                try:
                    os.chmod(os.path.join(root, d), 0o755)
                except OSError:
                    pass
        self.tmp_obj.cleanup()

    def write(self, name, data):
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        return path

    def assert_one_error(self, p, what, phrases=()):
        """exit 2, nothing on stdout, exactly one stderr line and it is ours ("error: …")."""
        err = text(p.stderr)
        detail = f"{what}: rc={p.returncode} stderr={err[:600]!r}"
        self.assertFalse(p.returncode < 0, f"killed by signal {-p.returncode}: {detail}")
        self.assertEqual(p.returncode, 2, detail)
        lines = err.splitlines()
        self.assertEqual(len(lines), 1, f"expected exactly one stderr line: {detail}")
        self.assertTrue(lines[0].startswith("error: "), detail)
        self.assertEqual(p.stdout, b"", f"stdout not empty: {detail}")
        for phrase in phrases:
            self.assertIn(phrase.lower(), lines[0].lower(), f"message does not say {phrase!r}: {detail}")
        return lines[0]

    def assert_trace_ok(self, p, what, tokens=BOOK_TOKENS):
        err = text(p.stderr)
        self.assertEqual(p.returncode, 0, f"{what}: rc={p.returncode} stderr={err[:600]!r}")
        self.assertEqual(err, "", f"{what}: stderr not empty: {err[:600]!r}")
        t = json.loads(p.stdout)
        self.assertEqual(t["format"], "attnscope-trace", what)
        self.assertEqual(t["workspace"]["tokens"], tokens, what)
        return t


class PytorchScriptNames(Base):
    """Item 3: the file name is written into the script's first comment; it must stay a comment."""

    def check_name(self, rel_name, tokens=None):
        marker = f"/tmp/PWNED-{secrets.token_hex(8)}"
        name = rel_name.replace(b"@MARKER@", marker.encode())
        full = os.path.join(self.tmp.encode(), name)
        os.makedirs(os.path.dirname(full), exist_ok=True)  # the "/"s of the code make folders
        ws = dict(WORKSPACE)
        if tokens is not None:
            ws["tokens"] = [t.replace("@MARKER@", marker) for t in tokens]
        with open(full, "wb") as f:
            f.write(workspace_text(ws))
        try:
            # Relative to the folder, so the name in the comment is exactly the crafted text.
            p, _ = run_cli(["pytorch", os.fsdecode(name)], cwd=self.tmp)
            self.assertEqual(p.returncode, 0, f"pytorch {name!r}: rc={p.returncode} {text(p.stderr)[:300]!r}")
            script = os.path.join(self.tmp, "script.py")
            with open(script, "wb") as f:
                f.write(p.stdout)
            # The script's `tokens` are the workspace's (what is not UTF-8 reads as U+FFFD).
            show = ("import json, runpy, sys; g = runpy.run_path(sys.argv[1]); "
                    "print(json.dumps(g['tokens']))")
            r = subprocess.run([PYTHON, "-c", show, script], capture_output=True, timeout=120, cwd=self.tmp)
            self.assertFalse(os.path.exists(marker),
                             f"the file name {name!r} ran code: {marker} was created by the generated script")
            self.assertEqual(r.returncode, 0, f"the script for {name!r} does not run: {text(r.stderr)[-600:]!r}")
            self.assertEqual(json.loads(r.stdout.splitlines()[-1]), ws["tokens"], f"tokens of {name!r}")
            # And nothing the user named decides how Python reads the script: it is plain ASCII and its
            # second line declares UTF-8 (PEP 263 reads a declaration on line 1 or 2 only).
            self.assertTrue(p.stdout.isascii(), f"the script for {name!r} is not plain ASCII")
            self.assertEqual(p.stdout.split(b"\n")[1], b"# -*- coding: utf-8 -*-", f"line 2 for {name!r}")
            r = subprocess.run([PYTHON, script], capture_output=True, timeout=120, cwd=self.tmp)
            self.assertFalse(os.path.exists(marker),
                             f"the file name {name!r} ran code: {marker} was created by the generated script")
            self.assertEqual(r.returncode, 0, f"the script for {name!r} does not run: rc={r.returncode} "
                                              f"stderr={text(r.stderr)[-600:]!r}")
            self.assertIn("tensor(", text(r.stdout), f"the script for {name!r} printed no output tensor")
        finally:
            if os.path.exists(marker):
                os.remove(marker)

    def test_newline_then_code(self):  # the probe's name: the old script did not even compile
        self.check_name(b'x\nimport os; open("@MARKER@","w")\n.json')

    def test_newline_then_code_then_comment(self):  # the old script created the marker
        self.check_name(b'x\nimport os; open("@MARKER@","w")\n#.json')

    def test_carriage_return_then_code(self):  # Python ends a line at a lone \r too
        self.check_name(b'x\rimport os; open("@MARKER@","w")\r#.json')

    def test_name_not_utf8(self):  # raw \xff in the source: "SyntaxError: Non-UTF-8 code"
        self.check_name(b"caf\xe9 \xff\xfe.json")

    # The second probe: a coding declaration in the name (line 2 of the script held the name) made
    # Python decode the whole script as UTF-7, where "+ACI-" is a quote: a token became code.
    UTF7_TOKEN = "+ACI-, __import__(+ACI-os+ACI-).system(+ACI-touch @MARKER@+ACI-), +ACI-"

    def test_coding_utf7_in_name(self):
        self.check_name(b"lecture coding:utf-7 attention.json", ["Your", self.UTF7_TOKEN, "starts", "with", "one", "step"])

    def test_other_coding_spellings(self):
        for name in [b"x -*- coding: utf-7 -*-.json", b"vim: set fileencoding=utf_7 :.json", b"coding=UTF-7.json",
                     b"a\x0c# coding: utf-7.json", b"emacs -*- mode: python; coding: utf-7 -*-.json"]:
            with self.subTest(name=name):
                self.check_name(name, [self.UTF7_TOKEN, "journey", "starts", "with", "one", "step"])

    def test_latin1_coding_and_tokens_beyond_ascii(self):  # the tokens keep their characters
        self.check_name(b"coding: latin-1.json", ["caf\u00e9", "\u041f\u0440\u0438\u0432\u0435\u0442", "\U0001F600",
                                                 "a\u2028b", "tab\there", 'q"uo\\te'])

    def test_tokens_that_end_lines(self):  # \n, \r, \f, NEL, U+2028 in a token's comment or string
        self.check_name(b"tokens.json", ["x\nimport os; open('@MARKER@','w')", "y\rimport os; open('@MARKER@','w')",
                                         "z\x0cimport os", "\x85import os", "\u2029import os", "one"])


class Fifos(Base):
    """Item 8: a named pipe is not a workspace; opening it must not wait for a writer."""

    def test_fifo(self):
        fifo = os.path.join(self.tmp, "f")
        os.mkfifo(fifo)
        for args in (["trace", fifo], ["export", fifo, "--format", "json", "--out", os.path.join(self.tmp, "out")]):
            with self.subTest(command=args[0]):
                try:
                    p, seconds = run_cli(args, timeout=FIFO_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    self.fail(f"{args[0]} of a FIFO hung (no exit within {FIFO_TIMEOUT_S:.0f} s)")
                self.assert_one_error(p, f"{args[0]} FIFO", [fifo])


class BadPngs(Base):
    """Items 9 and 6: a damaged PNG gives one message of ours and nothing of libpng's."""

    def test_bad_pngs(self):
        good = tiny_png()
        ihdr_end = 8 + 8 + 13 + 4
        cases = {
            "signature_then_garbage": PNG_SIGNATURE + bytes(range(256)) * 4,
            "signature_only": PNG_SIGNATURE,
            "truncated_ihdr": good[:8 + 8 + 5],
            "bad_ihdr_crc": tiny_png(bad_ihdr_crc=True),
            "bad_idat_crc": good[:ihdr_end] + chunk(b"IDAT", zlib.compress(b"\0\1\2\3"), bad_crc=True)
                            + chunk(b"IEND", b""),
            "no_iend": good[:-12],
            # The workspace after the pixels, the file cut in the middle of the IDAT.
            "truncated_in_idat": tiny_png(after=[ztxt(KEY, workspace_text())])[:ihdr_end + 12],
            "damaged_workspace_chunk": tiny_png(after=[chunk(b"zTXt", KEY + b"\0\0" + b"\x78\x9c garbage")]),
        }
        for name, data in cases.items():
            with self.subTest(case=name):
                path = self.write(name + ".png", data)
                p, seconds = run_cli(["trace", path])
                self.assert_one_error(p, name, [path])
                self.assertNotIn("libpng", text(p.stderr), name)
                self.assertLess(seconds, 5, name)

    def test_truncated_screenshot(self):
        # An attnscope screenshot carries its workspace before the pixels; cut in the pixel data it
        # may be read (the workspace is whole) or refused — with one line of ours, never libpng's.
        data = tiny_png(before=[ztxt(KEY, workspace_text())])
        path = self.write("cut.png", data[:len(data) - 12 - 10])
        p, _ = run_cli(["trace", path])
        err = text(p.stderr)
        self.assertIn(p.returncode, (0, 2), err)
        if p.returncode == 0:
            self.assert_trace_ok(p, "truncated screenshot")
        else:
            self.assert_one_error(p, "truncated screenshot", [path])


class LargePngs(Base):
    """Item 6: the workspace of a PNG is found by walking its chunks, not by decoding pixels."""

    def test_30000_square_with_workspace_after_pixels(self):
        path = self.write("huge.png", huge_grey_png(30000, workspace_text()))
        size = os.path.getsize(path)
        self.assertLess(size, 4 << 20, "the test PNG should stay small")
        # A safety net for the machine: the old code decoded 900 MB of pixels. Not in the sanitizer
        # build (ATTNSCOPE_SANITIZE=1, set by tests/cli/CMakeLists.txt): AddressSanitizer reserves
        # terabytes of address space for its shadow at start and aborts under any RLIMIT_AS.
        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        sanitized = os.environ.get("ATTNSCOPE_SANITIZE") == "1"
        prefix = ("/usr/bin/time", "-v") if os.access("/usr/bin/time", os.X_OK) else ()
        p, seconds = run_cli(["trace", path], timeout=120, preexec_fn=None if sanitized else limit, prefix=prefix)
        err = text(p.stderr)
        rss = max_rss_kb(err) if prefix else None
        if prefix:  # /usr/bin/time's report is on stderr; the CLI's own lines come before it
            err = err.split("\tCommand being timed:")[0]
        self.assertEqual(p.returncode, 0, f"trace of a {size}-byte 30000×30000 PNG: rc={p.returncode} "
                                          f"{err[:400]!r} ({seconds:.1f} s, peak RSS {rss} kB)")
        self.assertEqual(err, "", f"stderr: {err[:400]!r}")
        t = json.loads(p.stdout)
        self.assertEqual(t["workspace"]["tokens"], BOOK_TOKENS)
        if rss is None:  # no /usr/bin/time: the children's peak from getrusage (this is the only big child)
            rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        report = f"30000×30000 PNG ({size} bytes): {seconds:.2f} s, peak RSS {rss / 1024:.1f} MB"
        print(f"\n  {report}", file=sys.stderr)
        self.assertTrue(seconds < 5.0 and rss < 200 * 1024, f"{report}; expected < 5 s and < 200 MB")

    def test_workspace_chunk_over_8_mb(self):
        # 9 MB of JSON (the workspace followed by spaces): libpng's default cap was 8,000,000 bytes.
        doc = workspace_text(pad=9_000_000)
        for kind, data in (("zTXt", ztxt(KEY, doc)), ("tEXt", chunk(b"tEXt", KEY + b"\0" + doc)),
                           ("iTXt", chunk(b"iTXt", KEY + b"\0\1\0\0\0" + zlib.compress(doc)))):
            with self.subTest(chunk=kind):
                path = self.write(f"big-{kind}.png", tiny_png(after=[data]))
                p, seconds = run_cli(["trace", path])
                self.assert_trace_ok(p, f"a {len(doc)}-byte {kind} workspace")

    def test_workspace_chunk_over_512_mib(self):
        # A workspace file may be as large as the largest workspace the app saves (512 MiB,
        # Limits::max_workspace_bytes), in a PNG too; beyond, it is refused before it is parsed.
        doc = workspace_text(pad=(512 << 20) + 1000)
        path = self.write("too-big.png", tiny_png(after=[ztxt(KEY, doc, level=1)]))
        del doc
        self.assertLess(os.path.getsize(path), 8 << 20)
        p, seconds = run_cli(["trace", path], timeout=120)
        line = self.assert_one_error(p, "a 512 MiB + 1000 byte zTXt workspace", [path])
        self.assertTrue(re.search(r"larger|exceeds|limit", line) and "512 MiB" in line,
                        f"the message does not give the size limit (512 MiB): {line!r}")
        # Its text is held whole, so within the memory budget too: under --memory-budget 64 the
        # chunk is refused at 64 MiB, and the inflated text never holds more (a string's doubling
        # and the fixed 512 MiB had held 1 GiB whatever the budget).
        prefix = ("/usr/bin/time", "-v") if os.access("/usr/bin/time", os.X_OK) else ()
        for budget in ("64", "100"):  # 100: not a power of two (reserve rounded up to one)
            p, seconds = run_cli(["trace", path, "--memory-budget", budget], timeout=120, prefix=prefix)
            err = text(p.stderr)
            rss = max_rss_kb(err) if prefix else None
            err = err.split("\tCommand being timed:")[0]
            self.assertEqual(p.returncode, 2, err)
            self.assertIn(f"larger than {budget} MiB", err)
            if rss is not None and os.environ.get("ATTNSCOPE_SANITIZE") != "1":
                self.assertLess(rss, 2 * int(budget) * 1024,
                                f"peak RSS {rss} kB refusing a 512 MiB text under a {budget} MiB budget")

    def test_large_screenshot(self):
        # F2: the app's own 8192² screenshot (44.5 MiB of pixels) was refused: the 34 × estimate of a
        # JSON file's parse was applied to the PNG's size, though only its text chunk is read.
        side = 3072  # RGB rows of noise, stored: a 27 MiB file (over the old 1 GiB / 34)
        rows = b"".join(b"\0" + os.urandom(3 * side) for _ in range(side))
        png = (PNG_SIGNATURE + ihdr(side, side, 2) + chunk(b"IDAT", zlib.compress(rows, 0)) +
               ztxt(KEY, workspace_text()) + chunk(b"IEND", b""))
        path = self.write("screenshot.png", png)
        self.assertGreater(os.path.getsize(path), 27 << 20)
        for budget in ("1024", "256"):
            with self.subTest(budget=budget):
                p, _ = run_cli(["trace", path, "--memory-budget", budget])
                self.assert_trace_ok(p, f"a {os.path.getsize(path) >> 20} MiB screenshot, budget {budget} MiB")


class ExportAtomic(Base):
    """Item 10, the CLI's part: `export` writes every file atomically, as §3.5 says."""

    def setUp(self):
        super().setUp()
        self.ws = self.write("ws.json", workspace_text())
        p, _ = run_cli(["trace", self.ws])
        self.assertEqual(p.returncode, 0, text(p.stderr))
        self.trace = p.stdout  # trace.json is byte for byte what `trace` prints (§2.5)
        self.old_umask = os.umask(0o022)

    def tearDown(self):
        os.umask(self.old_umask)
        super().tearDown()

    def export(self, out, **kw):
        return run_cli(["export", self.ws, "--format", "json", "--out", out], **kw)

    def assert_no_temporaries(self, folder, expected):
        names = sorted(os.listdir(folder))
        self.assertEqual(names, sorted(expected), f"files left in {folder}")

    def test_through_symlink(self):
        out, elsewhere = os.path.join(self.tmp, "out"), os.path.join(self.tmp, "elsewhere")
        os.makedirs(out)
        os.makedirs(elsewhere)
        real = os.path.join(elsewhere, "real.json")
        with open(real, "w") as f:
            f.write("old\n")
        link = os.path.join(out, "trace.json")
        os.symlink("../elsewhere/real.json", link)
        p, _ = self.export(out)
        self.assertEqual(p.returncode, 0, text(p.stderr))
        self.assertTrue(os.path.islink(link), "the symbolic link was replaced by a file")
        self.assertEqual(os.readlink(link), "../elsewhere/real.json")
        with open(real, "rb") as f:
            self.assertEqual(f.read(), self.trace, "the link's target did not get the new content")
        self.assert_no_temporaries(out, ["trace.json"])
        self.assert_no_temporaries(elsewhere, ["real.json"])

    def test_keeps_mode_0600(self):
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        target = os.path.join(out, "trace.json")
        with open(target, "w") as f:
            f.write("old\n")
        os.chmod(target, 0o600)
        p, _ = self.export(out)
        self.assertEqual(p.returncode, 0, text(p.stderr))
        mode = stat.S_IMODE(os.stat(target).st_mode)
        self.assertEqual(mode, 0o600, f"mode {mode:o} after the export, was 600")
        with open(target, "rb") as f:
            self.assertEqual(f.read(), self.trace)
        self.assert_no_temporaries(out, ["trace.json"])

    def test_new_file_mode_follows_umask(self):
        out = os.path.join(self.tmp, "out")
        p, _ = self.export(out)
        self.assertEqual(p.returncode, 0, text(p.stderr))
        mode = stat.S_IMODE(os.stat(os.path.join(out, "trace.json")).st_mode)
        self.assertEqual(mode, 0o644, f"a new file's mode is {mode:o}, expected 644 under umask 022")

    def test_out_is_a_file(self):
        out = self.write("out", "a plain file\n")
        p, _ = self.export(out)
        self.assert_one_error(p, "--out is a file", [out])
        with open(out) as f:
            self.assertEqual(f.read(), "a plain file\n")

    def test_target_is_a_directory(self):
        out = os.path.join(self.tmp, "out")
        inside = os.path.join(out, "trace.json", "keep.txt")
        os.makedirs(os.path.dirname(inside))
        with open(inside, "w") as f:
            f.write("keep\n")
        p, _ = self.export(out)
        self.assert_one_error(p, "trace.json is a folder", ["trace.json"])
        with open(inside) as f:
            self.assertEqual(f.read(), "keep\n")
        self.assert_no_temporaries(out, ["trace.json"])

    def test_write_fails_half_way(self):
        # RLIMIT_FSIZE stops every write past 4 KiB with EFBIG, for root as well (SIGXFSZ ignored).
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        target = os.path.join(out, "trace.json")
        with open(target, "w") as f:
            f.write("old\n")

        def small_files():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        self.assertGreater(len(self.trace), 4096)
        p, _ = self.export(out, preexec_fn=small_files)
        self.assert_one_error(p, "a write that fails half-way", [target])
        with open(target) as f:
            self.assertEqual(f.read(), "old\n", "the old file was damaged by a failed write")
        self.assert_no_temporaries(out, ["trace.json"])

    def test_read_only_folder(self):
        if os.geteuid() == 0:
            print("\n  skipped the read-only folder case: running as root, permissions do not apply "
                  "(the other failure cases cover it)", file=sys.stderr)
            return
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        target = os.path.join(out, "trace.json")
        with open(target, "w") as f:
            f.write("old\n")
        os.chmod(out, 0o555)
        p, _ = self.export(out)
        self.assert_one_error(p, "read-only folder", [target])
        with open(target) as f:
            self.assertEqual(f.read(), "old\n")
        self.assert_no_temporaries(out, ["trace.json"])


# ---- The second probe (nothing run, nothing lost, nothing unbounded) --------------------------

class SpecialFilesAreNeverReplaced(Base):
    """F5: a write onto a FIFO, a device, a socket or a folder (directly or through a symbolic link)
    is refused before anything is written; the special file is still there, untouched. (Run as
    root, the old code renamed a regular file over the machine's /dev/full.)"""

    def setUp(self):
        super().setUp()
        self.ws = self.write("ws.json", workspace_text())

    def export(self, out):
        return run_cli(["export", self.ws, "--format", "json", "--out", out])

    def make_special(self, path, kind):
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "socket":
            import socket
            s = socket.socket(socket.AF_UNIX)
            s.bind(path)
            s.close()
        elif kind == "device":  # a node of /dev/null's numbers, in our own folder (root only)
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return os.lstat(path).st_mode

    def check_kind(self, kind, through_link):
        out = os.path.join(self.tmp, f"out-{kind}-{through_link}")
        os.makedirs(out)
        target = os.path.join(out, "trace.json")
        special = os.path.join(self.tmp, f"special-{kind}-{through_link}") if through_link else target
        mode = self.make_special(special, kind)
        if through_link:
            os.symlink(special, target)
        p, seconds = self.export(out)
        self.assertLess(seconds, 10, "a FIFO must not block the write")
        self.assert_one_error(p, f"trace.json is a {kind}" + (" (link)" if through_link else ""), ["trace.json"])
        self.assertEqual(os.lstat(special).st_mode, mode, f"the {kind} was replaced")
        names = sorted(n for n in os.listdir(out))
        self.assertEqual(names, ["trace.json"], f"files left in {out}")

    def test_fifo_socket_device(self):
        kinds = ["fifo", "socket"] + (["device"] if os.geteuid() == 0 else [])
        for kind in kinds:
            for through_link in (False, True):
                with self.subTest(kind=kind, link=through_link):
                    self.check_kind(kind, through_link)


class StdoutIsChecked(Base):
    """F9: a command whose output cannot be written (stdout on a full disk or a failing device)
    exits 2 with one error line, never 0 with a truncated file."""

    def run_to(self, args, stdout_path=None, preexec_fn=None):
        env = dict(os.environ, ATTNSCOPE_ASSETS=ASSETS)
        with open(stdout_path or "/dev/full", "wb") as out:
            return subprocess.run([CLI, *args], stdout=out, stderr=subprocess.PIPE, env=env, timeout=120,
                                  preexec_fn=preexec_fn)

    def test_dev_full(self):
        ws = self.write("ws.json", workspace_text())
        emb = self.write("emb.txt", json.dumps(BOOK_EMBEDDINGS))
        for args in (["pytorch", ws], ["import", "--embeddings", emb], ["trace", ws],
                     ["bench", ws, "--repeat", "1"], ["export", ws, "--format", "csv", "--out", os.path.join(self.tmp, "x")]):
            with self.subTest(command=args[0]):
                p = self.run_to(args)
                lines = text(p.stderr).splitlines()
                self.assertEqual(p.returncode, 2, f"{args[0]} > /dev/full: rc={p.returncode} {lines}")
                self.assertEqual(len(lines), 1, lines)
                self.assertTrue(lines[0].startswith("error: stdout: "), lines)

    def test_disk_fills_up(self):  # the probe's case: a 20 MB mine.json cut short, exit 0
        rows = [[(i * 31 + c) % 997 / 997 for c in range(256)] for i in range(2000)]
        emb = self.write("big.txt", json.dumps(rows))
        mine = os.path.join(self.tmp, "mine.json")

        def small_files():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        p = self.run_to(["import", "--embeddings", emb], stdout_path=mine, preexec_fn=small_files)
        lines = text(p.stderr).splitlines()
        self.assertEqual(p.returncode, 2, f"rc={p.returncode} {lines}")
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("stdout", lines[0])


class ExportJsonStreams(Base):
    """F3: `export --format json` streams trace.json into its file: its peak memory is the trace's,
    not the trace's plus the whole text (twice, while a string stream grows), and under a memory
    limit it writes the whole file or refuses with one line — never a truncated file and exit 0."""

    WS = {"format": "attnscope-workspace", "version": 1,
          "embeddings": {"random": "uniform", "seed": 3, "rows": 512, "cols": 32},
          "model": {"variant": "multihead", "d_out": 32, "num_heads": 4, "batch_size": 1, "dropout": 0.1}}

    def peak_kb(self, args):
        p = subprocess.run(["/usr/bin/time", "-f", "%M", CLI, *args], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, env=dict(os.environ, ATTNSCOPE_ASSETS=ASSETS), timeout=300)
        self.assertEqual(p.returncode, 0, text(p.stderr))
        return int(text(p.stderr).strip().splitlines()[-1])

    def test_peak_is_the_traces(self):
        if os.environ.get("ATTNSCOPE_SANITIZE") == "1":  # the sanitizer's own memory would decide
            self.skipTest("peak memory is not measured in a sanitizer build")
        if not os.path.exists("/usr/bin/time"):
            self.skipTest("no /usr/bin/time")
        ws = self.write("ws.json", json.dumps(self.WS))
        trace_kb = self.peak_kb(["trace", ws])
        out = os.path.join(self.tmp, "out")
        export_kb = self.peak_kb(["export", ws, "--format", "json", "--out", out])
        size = os.path.getsize(os.path.join(out, "trace.json"))
        print(f"\n  trace.json {size / 1e6:.1f} MB: trace peak {trace_kb / 1024:.0f} MB, export peak {export_kb / 1024:.0f} MB",
              file=sys.stderr)
        self.assertGreater(size, 40e6)
        self.assertLess(export_kb, trace_kb + 24 * 1024, "export --format json holds the text in memory")

    def test_under_a_memory_limit(self):
        if os.environ.get("ATTNSCOPE_SANITIZE") == "1":  # ASan's shadow needs terabytes of address space
            self.skipTest("RLIMIT_AS cannot apply to a sanitizer build")
        ws = self.write("ws.json", json.dumps(self.WS))
        p, _ = run_cli(["trace", ws])
        self.assertEqual(p.returncode, 0)
        whole = p.stdout
        # Below ~320 MiB of address space Debian's OpenBLAS (libopenblas0-openmp 0.3.21) loops in
        # its initialisation, before main, retrying the mmap of its buffers: the limits start above.
        for mib in (360, 400, 440, 520):
            with self.subTest(limit_mib=mib):
                out = os.path.join(self.tmp, f"out{mib}")
                limit = mib << 20
                p, _ = run_cli(["export", ws, "--format", "json", "--out", out], timeout=120,
                               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
                target = os.path.join(out, "trace.json")
                if p.returncode == 0:
                    with open(target, "rb") as f:
                        self.assertEqual(f.read(), whole, f"exit 0 under {mib} MiB but trace.json is not the whole trace")
                else:
                    self.assert_one_error(p, f"export under {mib} MiB")
                    self.assertFalse(os.path.exists(target), "a failed export left trace.json")
                if os.path.isdir(out):
                    self.assertEqual([n for n in os.listdir(out) if n.startswith(".attnscope-")], [])


class DeepParameters(Base):
    """F4: parameters nested 150 000 deep (arrays or objects, in a state_dict's JSON or a
    workspace's "parameters") are one error, not a stack overflow (exit 139)."""

    def test_deep(self):
        emb = self.write("emb.txt", json.dumps(BOOK_EMBEDDINGS))
        d = 150000
        cases = {
            "arrays": '{"W_query.weight": ' + "[" * d + "]" * d + "}",
            "objects": '{"W_query.weight": ' + '{"a": ' * d + "1" + "}" * d + "}",
            "workspace": '{"format": "attnscope-workspace", "parameters": {"a": ' + "[" * d + "]" * d + "}}",
            "workspace view": '{"format": "attnscope-workspace", "view": ' + "[" * d + "]" * d + ', "parameters": {}}',
            "top": "[" * d + "]" * d,
        }
        for name, body in cases.items():
            with self.subTest(case=name):
                path = self.write(f"deep-{name.replace(' ', '-')}.json", body)
                p, _ = run_cli(["import", "--embeddings", emb, "--parameters", path])
                self.assert_one_error(p, f"deep {name}", [path])

class TemporaryFilesCleanedAtNextStart(Base):
    """F10: a run killed in the middle of a write left its hidden .attnscope-XXXXXX beside the file
    for ever. Every run journals its temporary files in the state folder; the next run removes what
    a dead run's journal lists — and nothing else: not a file of that name it did not list, not what
    a live run's journal (its lock held) lists."""

    def test_killed_export(self):
        import fcntl
        state = os.path.join(self.tmp, "state")
        env = dict(os.environ, ATTNSCOPE_ASSETS=ASSETS, XDG_STATE_HOME=state)
        ws = self.write("ws.json", json.dumps(ExportJsonStreams.WS))
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        temps = []
        for attempt in range(20):  # kill it while trace.json's temporary file is being written
            p = subprocess.Popen([CLI, "export", ws, "--format", "json", "--out", out], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 30
            while time.time() < deadline and p.poll() is None:
                temps = [n for n in os.listdir(out) if n.startswith(".attnscope-")]
                if temps:
                    p.kill()
                    break
                time.sleep(0.002)
            p.wait()
            if temps and os.path.exists(os.path.join(out, temps[0])):
                break
        self.assertTrue(temps, "no run was caught in the middle of its write")
        journals = os.listdir(os.path.join(state, "attnscope", "temporary"))
        self.assertEqual(len(journals), 1, journals)
        # A file of the same kind the journal does not list, and a live run's journal: both stay.
        decoy = self.write("out/.attnscope-decoy1", "not ours\n")
        live_temp = self.write("out/.attnscope-live01", "a live run's\n")
        live = os.path.join(state, "attnscope", "temporary", "999999999.journal")
        with open(live, "w") as f:
            f.write(live_temp + "\n")
        holder = open(live)
        fcntl.flock(holder, fcntl.LOCK_EX)
        try:
            p = subprocess.run([CLI, "trace", ws, "--outputs-only"], env=env, capture_output=True, timeout=60)
            self.assertEqual(p.returncode, 0, text(p.stderr))
        finally:
            holder.close()
        self.assertFalse(os.path.exists(os.path.join(out, temps[0])), "the killed run's temporary file is still there")
        self.assertTrue(os.path.exists(decoy), "a file the journal did not list was removed")
        self.assertTrue(os.path.exists(live_temp), "a live run's temporary file was removed")
        self.assertEqual(sorted(os.listdir(os.path.join(state, "attnscope", "temporary"))), ["999999999.journal"],
                         "the dead run's journal was not removed, or the live one was")

if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    CLI, ASSETS = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    unittest.main(verbosity=2)
