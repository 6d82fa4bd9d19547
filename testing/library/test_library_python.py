"""ctest library_python: libslabcast's Python module (server/lib/python/slabcast)
sends a 64^3 volume as 4 streams into the real receiver on loopback, one
Sender a slab of depth 16, each given its values another way: a C-order view,
a Fortran-order array, a strided view sent with copy=True, and a C array to a
queued sender that is overwritten as soon as each call returns. The ParaView
reader then shows the last step bit for bit, with its step number. And every
misuse raises an exception whose message names the problem."""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import library_testlib as lt  # noqa: E402

numpy, slabcast = lt.import_slabcast()
lt.require_plugin()

DIMS, DEPTH, SLABS, STEPS = (64, 64, 64), 16, 4, 3
RATE = "500M"  # per stream: far below what the receiver takes on loopback, so nothing is lost


def volume(step):
    """step * 1e6 + the voxel's linear index: each value says where and when
    it belongs, and float32 holds every one exactly (< 2^24)."""
    nx, ny, nz = DIMS
    return (step * 1e6 + numpy.arange(nx * ny * nz, dtype=numpy.float64)).astype(numpy.float32).reshape(nz, ny, nx)


class SendAndReadBack(unittest.TestCase):
    def setUp(self):
        self.receiver = lt.Receiver("library-python", "lib", DIMS, DEPTH, range(SLABS))

    def tearDown(self):
        self.receiver.close()

    def test_four_senders_bit_for_bit_through_the_reader(self):
        r = self.receiver
        # Senders 0 and 3 pack on several threads, a part of the slab each;
        # 1 and 3 send with forward error correction (the receiver takes each
        # datagram through its groups).
        senders = [slabcast.Sender(DIMS, (k * DEPTH, (k + 1) * DEPTH), r.destination(k), rate=RATE,
                                   slab_depth=DEPTH, queue_steps=2 if k == 3 else 0,
                                   encode_threads={0: 2, 3: 4}.get(k, 1), fec={1: "8+2", 3: "20+4/2"}.get(k, "none"))
                   for k in range(SLABS)]
        strided = numpy.full((DEPTH, DIMS[1], 2 * DIMS[0]), numpy.nan, numpy.float32)
        for step in range(STEPS):
            full = volume(step)
            c_order = full[0:DEPTH]  # a view of planes 0-15: C-contiguous, no copy anywhere
            fortran = numpy.asfortranarray(full[DEPTH:2 * DEPTH].transpose(2, 1, 0))  # (nx, ny, 16), x fastest
            self.assertTrue(fortran.flags.f_contiguous and not fortran.flags.c_contiguous)
            strided[:, :, ::2] = full[2 * DEPTH:3 * DEPTH]  # every other x: the right shape, not contiguous
            queued = full[3 * DEPTH:].copy()
            senders[0].send_step(step, c_order)
            senders[1].send_step(step, fortran)
            senders[2].send_step(step, strided[:, :, ::2], copy=True)
            senders[3].send_step(step, queued)
            # The queued sender copied the values before it returned: what it
            # sends may not change when the caller's array does.
            queued[...] = -1.0
        for sender in senders:
            sender.flush()
            stats = sender.stats()
            self.assertEqual((stats["steps_sent"], stats["steps_dropped"]), (STEPS, 0), stats)
            self.assertGreaterEqual(stats["bytes"], STEPS * DEPTH * DIMS[0] * DIMS[1] * 4, stats)
            self.assertEqual(stats["packets"], STEPS * stats["packets_a_step"], stats)
            sender.close()
            self.assertEqual(sender.stats(), stats, "the figures kept after close() are the last ones")
        r.wait_published(range(SLABS), STEPS - 1)

        step, values, ages = lt.read_back(r)
        self.assertEqual(step, STEPS - 1, "the reader shows step %d" % step)
        self.assertEqual(lt.first_difference(values, volume(STEPS - 1).tobytes()), "",
                         "the reader's volume is not the last step sent")
        self.assertFalse(any(ages), "some values shown came from an older step")
        print("LIBRARY_PYTHON_OK: 4 senders (C order on 2 threads, Fortran order with FEC, strided + copy=True, "
              "queued on 4 threads with FEC), step %d "
              "bit for bit through the reader; %d packets a step a stream" % (step, stats["packets_a_step"]),
              flush=True)


class Misuse(unittest.TestCase):
    """Each mistake raises at once, with a message that names it."""

    DEST = "127.0.0.1:9"  # nothing is sent in these tests: opening only resolves and opens a socket

    def assert_error(self, code, pattern, function, *args, **kwargs):
        with self.assertRaises(slabcast.Error) as caught:
            function(*args, **kwargs)
        e = caught.exception
        self.assertIsInstance(e, RuntimeError)
        self.assertEqual(e.code, code, "%s: code %d, expected %d" % (e, e.code, code))
        self.assertRegex(e.message, re.compile(pattern, re.I))
        self.assertIn(e.message, str(e))
        print("  %s" % e, flush=True)

    def open(self, dims=DIMS, z_range=(0, DEPTH), destination=DEST, **kwargs):
        return slabcast.Sender(dims, z_range, destination, slab_depth=kwargs.pop("slab_depth", DEPTH), **kwargs)

    def test_bad_dims(self):
        for dims in [(0, 64, 64), (64, -1, 64), (64, 64, 0)]:
            self.assert_error(slabcast.ERROR_ARGUMENT, r"dim|nx|ny|nz", self.open, dims=dims)
        with self.assertRaisesRegex(ValueError, "dims"):
            self.open(dims=(64, 64))

    def test_z_range_outside_the_volume(self):
        for z_range in [(48, 80), (-16, 0), (32, 16)]:
            self.assert_error(slabcast.ERROR_ARGUMENT, r"z_begin|z_end|z range|plane", self.open, z_range=z_range)

    def test_z_begin_not_a_multiple_of_the_slab_depth(self):
        self.assert_error(slabcast.ERROR_ARGUMENT, r"\[8, 24\).*slab of depth 16", self.open, z_range=(8, 24))

    def test_unresolvable_destination(self):
        self.assert_error(slabcast.ERROR_NETWORK, r"no-such-host\.invalid", self.open,
                          destination="no-such-host.invalid:9")

    def test_bad_port(self):
        for destination in ["127.0.0.1:99999", "127.0.0.1:", "127.0.0.1", "127.0.0.1:x9", "[::1]9"]:
            with self.assertRaises(slabcast.Error) as caught:
                self.open(destination=destination)
            self.assertIn(caught.exception.code, (slabcast.ERROR_ARGUMENT, slabcast.ERROR_NETWORK))
            self.assertRegex(caught.exception.message, r"(?i)port|" + re.escape(destination))
            print("  %s" % caught.exception, flush=True)

    def test_bad_options(self):
        self.assert_error(slabcast.ERROR_ARGUMENT, r"codec|zstd", self.open, codec="zstd")
        self.assert_error(slabcast.ERROR_ARGUMENT, r"wire|udp", self.open, wire="udp")
        self.assert_error(slabcast.ERROR_ARGUMENT, r"order|hilbert", self.open, order="hilbert")
        self.assert_error(slabcast.ERROR_ARGUMENT, r"rate|fast", self.open, rate="fast")
        self.assert_error(slabcast.ERROR_ARGUMENT, r"encode_threads 33: expected 0\.\.32", self.open,
                          encode_threads=33)
        for fec in ["200", "200+0", "241+1", "200+60", "8+2/0", "8+2/65", "x+2", "8+2/"]:
            self.assert_error(slabcast.ERROR_ARGUMENT, r"FEC '%s'" % re.escape(fec), self.open, fec=fec)
        with self.assertRaisesRegex(ValueError, "queue_policy"):
            self.open(queue_policy="newest")
        with self.assertRaisesRegex(ValueError, "queue_steps"):
            self.open(queue_steps=-1)

    def test_bad_arrays(self):
        with self.open() as sender:
            good = numpy.zeros((DEPTH, DIMS[1], DIMS[0]), numpy.float32)
            with self.assertRaisesRegex(TypeError, "float32.*float64"):
                sender.send_step(0, good.astype(numpy.float64))
            with self.assertRaisesRegex(TypeError, "byte-swapped"):
                sender.send_step(0, good.astype(">f4"))
            with self.assertRaisesRegex(TypeError, "ndarray"):
                sender.send_step(0, good.tolist())
            for shape in [(DEPTH + 1, DIMS[1], DIMS[0]), (DIMS[0], DIMS[1]), (DEPTH * DIMS[1] * DIMS[0],)]:
                with self.assertRaisesRegex(ValueError, r"shape .*\(16, 64, 64\).*\(64, 64, 16\)"):
                    sender.send_step(0, numpy.zeros(shape, numpy.float32))
            strided = numpy.zeros((DEPTH, DIMS[1], 2 * DIMS[0]), numpy.float32)[:, :, ::2]
            with self.assertRaisesRegex(ValueError, "not C-contiguous.*copy=True"):
                sender.send_step(0, strided)
            # The Fortran shape in C order: z fastest, not x.
            with self.assertRaisesRegex(ValueError, "not Fortran-contiguous.*copy=True"):
                sender.send_step(0, numpy.zeros((DIMS[0], DIMS[1], DEPTH), numpy.float32))
            with self.assertRaisesRegex(ValueError, "step"):
                sender.send_step(-1, good)
            with self.assertRaisesRegex(ValueError, "step"):
                sender.send_step(2**31, good)

    def test_send_after_close(self):
        sender = self.open()
        sender.close()
        sender.close()  # a second close does nothing
        self.assertTrue(sender.closed)
        good = numpy.zeros((DEPTH, DIMS[1], DIMS[0]), numpy.float32)
        self.assert_error(slabcast.ERROR_STATE, "closed", sender.send_step, 0, good)
        self.assert_error(slabcast.ERROR_STATE, "closed", sender.flush)

    def test_destination_port_0(self):
        # Port 0 is a fine local port (the kernel picks one), but no
        # destination: a sender opened on it would send every step to nowhere.
        self.assert_error(slabcast.ERROR_ARGUMENT, r"port", self.open, destination="127.0.0.1:0")

    def test_rank_slab(self):
        self.assertEqual([slabcast.rank_slab(64, r, 4) for r in range(4)],
                         [(0, 16, 16), (16, 32, 16), (32, 48, 16), (48, 64, 16)])
        self.assertEqual(slabcast.rank_slab(10, 3, 4), (9, 10, 3))  # slabs of ceil(10 / 4) = 3, the last shorter
        z0, z1, _ = slabcast.rank_slab(5, 3, 4)  # slabs of 2: ranks 0-2 hold all 5 planes
        self.assertEqual(z0, z1, "rank 3 of 4 has no planes of 5")
        for args in [(64, 4, 4), (64, -1, 4), (64, 0, 0)]:
            self.assert_error(slabcast.ERROR_ARGUMENT, r"rank|size|nz", slabcast.rank_slab, *args)


if __name__ == "__main__":
    lt.unittest_main()
