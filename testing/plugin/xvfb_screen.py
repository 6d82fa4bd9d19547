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


def changed_fraction(a, b):
    """Fraction of pixels that differ between two snapshots."""
    width, height, rows_a = a
    _, _, rows_b = b
    changed = 0
    for ra, rb in zip(rows_a, rows_b):
        if ra != rb:
            changed += sum(1 for i in range(0, 3 * width, 3) if ra[i:i + 3] != rb[i:i + 3])
    return changed / float(width * height)


def write_png(path, shot):
    """Saves a snapshot as PNG (for a person looking at a failed test)."""
    width, height, rows = shot
    raw = b"".join(b"\x00" + r for r in rows)

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
