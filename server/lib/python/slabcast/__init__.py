"""slabcast: stream a running simulation's volume into slabcast receivers.

The Python face of libslabcast (server/lib/include/slabcast/slabcast.h), in
ctypes over its C API: no compiled extension, so the module is this one file
plus the library. A sender owns planes [z_begin, z_end) of a float32 volume and
sends each step of them as one UDP stream to a `slabcast receive` stream, with
the shuffler's own packing, pacing and wire format.

    import numpy, slabcast
    z0, z1, depth = slabcast.rank_slab(nz, rank, size)
    with slabcast.Sender((nx, ny, nz), (z0, z1), "10.0.0.2:9000", rate="2.81G",
                         slab_depth=depth) as sender:
        for step in range(steps):
            sender.send_step(step, density[z0:z1])   # shape (z1 - z0, ny, nx), float32

Arrays are float32 in the machine's byte order, x fastest in memory: shape
(z_end - z_begin, ny, nx) in C order, or (nx, ny, z_end - z_begin) in Fortran
order (the same bytes). Either goes to the library as it is, with no copy.

Errors the library reports raise slabcast.Error (a RuntimeError) with the
library's status code and message. What this module checks itself raises
TypeError (not float32) or ValueError (wrong shape, a layout that is not x
fastest and contiguous, an argument of the wrong kind).

The library is found in this order: the SLABCAST_LIBRARY environment variable
(a path); the path CMake wrote next to this file (_library_path.py) at build or
install time; ctypes.util.find_library("slabcast").
"""
import ctypes
import ctypes.util
import os

import numpy

__all__ = ["Error", "Sender", "rank_slab", "OK", "ERROR_ARGUMENT", "ERROR_NETWORK", "ERROR_STATE",
           "ERROR_MEMORY"]

# slabcast_status (slabcast.h).
OK, ERROR_ARGUMENT, ERROR_NETWORK, ERROR_STATE, ERROR_MEMORY = 0, 1, 2, 3, 4
_STATUS_NAMES = {OK: "SLABCAST_OK", ERROR_ARGUMENT: "SLABCAST_ERROR_ARGUMENT", ERROR_NETWORK: "SLABCAST_ERROR_NETWORK",
                 ERROR_STATE: "SLABCAST_ERROR_STATE", ERROR_MEMORY: "SLABCAST_ERROR_MEMORY"}
# slabcast_queue_policy (slabcast.h).
_QUEUE_POLICIES = {"block": 0, "drop_oldest": 1}
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


class Error(RuntimeError):
    """A call into libslabcast failed: `code` is its slabcast_status (one of
    ERROR_ARGUMENT, ERROR_NETWORK, ERROR_STATE, ERROR_MEMORY), `message` the
    library's slabcast_last_error() text, `function` the C function."""

    def __init__(self, code, message, function):
        self.code, self.message, self.function = code, message, function
        super().__init__("%s: %s (%s)" % (function, message, _STATUS_NAMES.get(code, "status %d" % code)))


class _Options(ctypes.Structure):
    # The layout of slabcast_options, field for field (an enum is an int on the
    # C ABIs this builds for).
    _fields_ = [("dims", ctypes.c_int64 * 3), ("z_begin", ctypes.c_int64), ("z_end", ctypes.c_int64),
                ("slab_depth", ctypes.c_int64), ("destination", ctypes.c_char_p), ("bind", ctypes.c_char_p),
                ("rate", ctypes.c_char_p), ("wire", ctypes.c_char_p), ("codec", ctypes.c_char_p),
                ("order", ctypes.c_char_p), ("queue_steps", ctypes.c_int), ("queue_policy", ctypes.c_int),
                ("encode_threads", ctypes.c_int), ("fec", ctypes.c_char_p)]


class _Stats(ctypes.Structure):
    _fields_ = [("steps_sent", ctypes.c_uint64), ("steps_dropped", ctypes.c_uint64), ("packets", ctypes.c_uint64),
                ("bytes", ctypes.c_uint64), ("packets_a_step", ctypes.c_uint64), ("send_seconds", ctypes.c_double)]


def _library_path():
    """Where the library is, or None for "let the loader search"."""
    path = os.environ.get("SLABCAST_LIBRARY")
    if path:
        return path, "SLABCAST_LIBRARY"
    try:
        from ._library_path import LIBRARY_PATH
    except ImportError:  # the source tree's copy: CMake writes the file only into the build and install trees
        LIBRARY_PATH = ""
    if LIBRARY_PATH and not os.path.isabs(LIBRARY_PATH):  # installed: relative to this folder, whatever the prefix
        LIBRARY_PATH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY_PATH))
    if LIBRARY_PATH and os.path.exists(LIBRARY_PATH):
        return LIBRARY_PATH, "_library_path.py"
    found = ctypes.util.find_library("slabcast")
    if found:
        return found, "ctypes.util.find_library"
    raise ImportError("slabcast: libslabcast not found: set SLABCAST_LIBRARY to the path of libslabcast.so "
                      "(built at build/server/lib/), or install it where the loader finds it")


def _load():
    path, how = _library_path()
    try:
        lib = ctypes.CDLL(path)  # CDLL, not PyDLL: every call releases the GIL, so senders run in parallel
    except OSError as e:
        raise ImportError("slabcast: cannot load libslabcast from %s (%s): %s" % (path, how, e)) from e
    sender_p = ctypes.c_void_p
    signatures = {
        "slabcast_options_init": (None, [ctypes.POINTER(_Options)]),
        "slabcast_rank_slab": (ctypes.c_int, [ctypes.c_int64, ctypes.c_int, ctypes.c_int,
                                              ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64),
                                              ctypes.POINTER(ctypes.c_int64)]),
        "slabcast_open": (ctypes.c_int, [ctypes.POINTER(_Options), ctypes.POINTER(sender_p)]),
        "slabcast_send_step": (ctypes.c_int, [sender_p, ctypes.c_int32, ctypes.c_void_p]),
        "slabcast_flush": (ctypes.c_int, [sender_p]),
        "slabcast_get_stats": (ctypes.c_int, [sender_p, ctypes.POINTER(_Stats)]),
        "slabcast_close": (ctypes.c_int, [sender_p]),
        "slabcast_last_error": (ctypes.c_char_p, []),
    }
    for name, (restype, argtypes) in signatures.items():
        try:
            function = getattr(lib, name)
        except AttributeError as e:
            raise ImportError("slabcast: %s (%s) has no %s: not libslabcast, or too old" % (path, how, name)) from e
        function.restype, function.argtypes = restype, argtypes
    return lib, path


_lib, LIBRARY = _load()


def _check(status, function):
    """Raises Error for a status other than SLABCAST_OK. The message is the
    calling thread's, and ctypes calls run on this thread, so it is this call's."""
    if status != OK:
        message = _lib.slabcast_last_error()
        raise Error(status, message.decode("utf-8", "replace") if message else "", function)


def _int(value, what, low=-_INT64_MAX - 1, high=_INT64_MAX):
    """An integer argument checked before ctypes would truncate it silently."""
    try:
        number = int(value.__index__())
    except (AttributeError, TypeError):
        raise TypeError("%s must be an integer, not %r" % (what, value)) from None
    if not low <= number <= high:
        raise ValueError("%s = %d is out of range %d..%d" % (what, number, low, high))
    return number


def _text(value, what):
    """A string option as the C API takes it (None stays NULL: the default)."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and what == "rate" and not isinstance(value, bool):
        value = "%.17g" % value  # bits a second, e.g. 2.81e9 -> "2810000000"
    if not isinstance(value, str):
        raise TypeError("%s must be a string, not %r" % (what, value))
    if "\0" in value:
        raise ValueError("%s holds a NUL character" % what)
    return value.encode("utf-8")


def _destination(value):
    """"HOST:PORT" as given, or a (host, port) pair ("[ADDR]:PORT" for IPv6)."""
    if isinstance(value, tuple) and len(value) == 2:
        host, port = value
        return "[%s]:%s" % (host, port) if ":" in str(host) else "%s:%s" % (host, port)
    return value


def rank_slab(nz, rank, size):
    """(z_begin, z_end, slab_depth) of rank `rank` of `size` when nz planes
    are cut into slabs of ceil(nz / size) planes; z_begin == z_end when the
    rank has no planes (size does not divide nz evenly)."""
    z_begin, z_end, depth = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
    _check(_lib.slabcast_rank_slab(_int(nz, "nz"), _int(rank, "rank", -2**31, _INT32_MAX),
                                   _int(size, "size", -2**31, _INT32_MAX), ctypes.byref(z_begin),
                                   ctypes.byref(z_end), ctypes.byref(depth)), "slabcast_rank_slab")
    return z_begin.value, z_end.value, depth.value


class Sender:
    """One stream: planes z_range = (z_begin, z_end) of a dims = (nx, ny, nz)
    float32 volume, sent to `destination` ("HOST:PORT", "[ADDR]:PORT" or a
    (host, port) pair) as slab z_begin / slab_depth (slab_depth 0: the
    sender's own planes are the slab).

    rate: per stream, "2.81G", "500M", ... or bits a second as a number
    ("0": unpaced). wire: "run" or
    "quad". codec (run packets): "none", "lz4", "zfp:RATE" or "quant:BITS". order: "scan",
    "morton" or "progressive" (coarse first). bind: the local address to send from (None: the kernel's).
    encode_threads: threads packing the packets, each a part of the slab, for a
    codec one core cannot run at the rate, on 4 or more cores (not yet measured
    there; slower than 1 on a 2-core host: docs/performance.md); 1: the sending
    thread. fec: forward error correction, "K+M" or "K+M/DEPTH" (M parity
    datagrams for every K, groups interleaved DEPTH deep, default 4; e.g.
    "200+22" for 5% random loss), so that the receiver rebuilds up to M lost
    datagrams a group; "none": off.

    queue_steps 0 (synchronous): send_step returns once the step is handed to
    the kernel, paced at the rate. queue_steps N > 0: send_step copies the step
    into one of N buffers and returns; a thread of the library sends them in
    order. queue_policy, when all N are full: "block" (wait for room, no step
    lost) or "drop_oldest" (overwrite the oldest step not yet being sent;
    stats()["steps_dropped"] counts them).

    A context manager: leaving the block closes the sender (which sends what
    is queued first)."""

    def __init__(self, dims, z_range, destination, rate="2.81G", wire="run", codec="none", order="scan",
                 slab_depth=0, queue_steps=0, queue_policy="block", bind=None, encode_threads=1, fec="none"):
        self._handle = None  # first, so that __del__ of a half-made sender has nothing to free
        self._final_stats = None
        dims = tuple(dims)
        if len(dims) != 3:
            raise ValueError("dims must be (nx, ny, nz), not %r" % (dims,))
        z_range = tuple(z_range)
        if len(z_range) != 2:
            raise ValueError("z_range must be (z_begin, z_end), not %r" % (z_range,))
        if queue_policy not in _QUEUE_POLICIES:
            raise ValueError("queue_policy must be 'block' or 'drop_oldest', not %r" % (queue_policy,))
        options = _Options()
        _lib.slabcast_options_init(ctypes.byref(options))
        options.dims[:] = [_int(d, "dims[%d]" % i) for i, d in enumerate(dims)]
        options.z_begin, options.z_end = _int(z_range[0], "z_begin"), _int(z_range[1], "z_end")
        options.slab_depth = _int(slab_depth, "slab_depth")
        # The encoded strings live as long as the sender: the C API does not
        # say that slabcast_open copies them, so they must not be freed under it.
        self._strings = [_text(_destination(destination), "destination"), _text(bind, "bind"),
                         _text(rate, "rate"), _text(wire, "wire"), _text(codec, "codec"), _text(order, "order"),
                         _text(fec, "fec")]
        (options.destination, options.bind, options.rate, options.wire, options.codec,
         options.order, options.fec) = self._strings
        options.queue_steps = _int(queue_steps, "queue_steps", 0, _INT32_MAX)
        options.queue_policy = _QUEUE_POLICIES[queue_policy]
        options.encode_threads = _int(encode_threads, "encode_threads", 0, _INT32_MAX)
        handle = ctypes.c_void_p()
        _check(_lib.slabcast_open(ctypes.byref(options), ctypes.byref(handle)), "slabcast_open")
        self._handle = handle
        self.dims = tuple(options.dims)
        self.z_range = (options.z_begin, options.z_end)
        self.destination = self._strings[0].decode() if self._strings[0] else None
        self.queue_steps = options.queue_steps
        # The two shapes the values may have; both are x fastest in memory when
        # contiguous in their order (C for the first, Fortran for the second).
        planes = self.z_range[1] - self.z_range[0]
        self._shape_c, self._shape_f = (planes, self.dims[1], self.dims[0]), (self.dims[0], self.dims[1], planes)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        # A sender dropped without close(): free the C side. Its errors have no
        # caller left to reach, and at interpreter exit the module may be gone.
        try:
            if self._handle is not None:
                _lib.slabcast_close(self._handle)
                self._handle = None
        except Exception:
            pass

    @property
    def closed(self):
        return self._handle is None

    def _live(self, function):
        if self._handle is None:
            raise Error(ERROR_STATE, "the sender is closed", function)
        return self._handle

    def _values(self, array, copy):
        """The array as the C API takes it: float32 x fastest, contiguous."""
        if not isinstance(array, numpy.ndarray):
            raise TypeError("send_step takes a numpy.ndarray of float32, not %s" % type(array).__name__)
        if array.dtype != numpy.dtype(numpy.float32):
            raise TypeError("send_step takes float32 values in the machine's byte order, not %s (convert with "
                            "array.astype(numpy.float32))" % (
                                array.dtype.name if array.dtype.isnative else array.dtype.str + ", byte-swapped"))
        shape = array.shape
        if shape == self._shape_c and array.flags.c_contiguous:
            return array
        if shape == self._shape_f and array.flags.f_contiguous:
            return array
        if shape not in (self._shape_c, self._shape_f):
            raise ValueError("the values have shape %s: this sender of planes %d..%d of %s takes shape %s in C "
                             "order or %s in Fortran order" % (shape, self.z_range[0], self.z_range[1],
                                                               "x".join(map(str, self.dims)), self._shape_c,
                                                               self._shape_f))
        # The right shape in another layout (a slice with steps, a transpose):
        # not x fastest in one block.
        order = "C" if shape == self._shape_c else "Fortran"
        if not copy:
            raise ValueError("the values of shape %s are not %s-contiguous (strides %s), so not x fastest in one "
                             "block: pass copy=True to send a contiguous copy" % (shape, order, array.strides))
        # When both shapes are the same (nx == planes) the C reading wins, as documented.
        array = numpy.ascontiguousarray(array) if order == "C" else numpy.asfortranarray(array)
        return array

    def send_step(self, step, array, copy=False):
        """Sends step `step` (0..2^31-1) of this sender's planes.

        array: float32, shape (z_end - z_begin, ny, nx) C-contiguous or
        (nx, ny, z_end - z_begin) Fortran-contiguous. The copies made:
        - synchronous sender (queue_steps 0): none before the library, which
          reads the values from the array as it packs and sends them, and
          returns once they are sent.
        - queued sender: one, by the library, into its queue buffer; the
          call returns after it, and the array may then change.
        - copy=True on an array of the right shape in neither layout (a
          strided slice, a transpose): one more first, numpy's, into a
          contiguous array (in C order when nx == z_end - z_begin makes the
          two shapes one); an array already in a layout is passed as it is.
          Without copy=True such an array raises ValueError.
        The array is held only for the call: the library does not keep the
        pointer after it returns."""
        handle = self._live("slabcast_send_step")
        step = _int(step, "step", 0, _INT32_MAX)
        values = self._values(array, copy)
        _check(_lib.slabcast_send_step(handle, step, values.ctypes.data), "slabcast_send_step")
        # `values` (and `array`) stay referenced until here, past the C call.
        del values

    def flush(self):
        """Waits until every queued step is sent (returns at once when synchronous)."""
        _check(_lib.slabcast_flush(self._live("slabcast_flush")), "slabcast_flush")

    def stats(self):
        """{steps_sent, steps_dropped, packets, bytes, packets_a_step,
        send_seconds}; after close(), the figures as they were at the end."""
        if self._handle is None and self._final_stats is not None:
            return dict(self._final_stats)
        stats = _Stats()
        _check(_lib.slabcast_get_stats(self._live("slabcast_get_stats"), ctypes.byref(stats)), "slabcast_get_stats")
        return {name: getattr(stats, name) for name, _ in _Stats._fields_}

    def close(self):
        """Sends what is queued, stops the sending thread and frees the sender.
        A second close does nothing. Raises Error when a queued step could not
        be sent; the sender is freed all the same."""
        if self._handle is None:
            return
        handle = self._handle
        error = None
        try:
            # Flush first so the figures kept for stats() count every step.
            self.flush()
        except Error as e:
            error = e
        try:
            self._final_stats = self.stats()
        except Error as e:
            error = error or e
        self._handle = None
        status = _lib.slabcast_close(handle)
        if error is None:
            _check(status, "slabcast_close")
        else:
            raise error
