"""Reads the screen of an Xvfb started with -fbdir: Xvfb keeps its framebuffer
there as an XWD file (DIR/Xvfb_screen0), so a test can take screenshots of a
GUI without any screenshot tool installed. 24-bit TrueColor screens only."""
import struct
import zlib


def snapshot(fbdir):
    """(width, height, rows of RGB bytes) of screen 0 now."""
    with open(fbdir + "/Xvfb_screen0", "rb") as f:
        data = f.read()
    header_size = struct.unpack(">I", data[:4])[0]
    fields = struct.unpack(">25I", data[:100])
    width, height = fields[4], fields[5]
    byte_order, bits_per_pixel, bytes_per_line = fields[6], fields[11], fields[12]
    ncolors = fields[19]
    if bits_per_pixel != 32:
        raise ValueError("expected a 32-bit framebuffer, got %d bits per pixel" % bits_per_pixel)
    start = header_size + 12 * ncolors
    rows = []
    for y in range(height):
        row = data[start + y * bytes_per_line: start + y * bytes_per_line + 4 * width]
        # LSBFirst (0): bytes are B, G, R, unused.
        if byte_order == 0:
            rgb = bytearray(3 * width)
            rgb[0::3], rgb[1::3], rgb[2::3] = row[2::4], row[1::4], row[0::4]
        else:
            rgb = bytearray(3 * width)
            rgb[0::3], rgb[1::3], rgb[2::3] = row[1::4], row[2::4], row[3::4]
        rows.append(bytes(rgb))
    return width, height, rows


def changed_fraction(a, b, columns=None):
    """Fraction of pixels that differ between two snapshots; columns=(x0, x1)
    compares only that band of the screen (e.g. the render view, leaving out
    a dock panel that updates by itself)."""
    width, height, rows_a = a
    _, _, rows_b = b
    x0, x1 = columns if columns else (0, width)
    changed = 0
    for ra, rb in zip(rows_a, rows_b):
        ra, rb = ra[3 * x0:3 * x1], rb[3 * x0:3 * x1]
        if ra != rb:
            changed += sum(1 for i in range(0, len(ra), 3) if ra[i:i + 3] != rb[i:i + 3])
    return changed / float((x1 - x0) * height)


def read_png(path):
    """(width, height, rows of RGB bytes) of an 8-bit, non-interlaced RGB or
    RGBA PNG file (what Qt and write_png save)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("%s: not a PNG file" % path)
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError("%s: only 8-bit RGB/RGBA non-interlaced PNGs are read here" % path)
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        rgb = bytearray(3 * width)
        rgb[0::3], rgb[1::3], rgb[2::3] = line[0::bpp], line[1::bpp], line[2::bpp]
        rows.append(bytes(rgb))
    return width, height, rows


def distinct_colours(shot):
    """How many different RGB colours a snapshot holds (1: blank)."""
    _, _, rows = shot
    return len({row[i:i + 3] for row in rows for i in range(0, len(row), 3)})


def write_png(path, shot):
    """Saves a snapshot as PNG (for a person looking at a failed test)."""
    width, height, rows = shot
    raw = b"".join(b"\x00" + r for r in rows)

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
