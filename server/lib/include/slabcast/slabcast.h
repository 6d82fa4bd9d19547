/* libslabcast: stream a running simulation's volume straight into slabcast
 * receivers, one stream per sender (per MPI rank): the SC11 decomposition of a
 * volume into z-slabs, one UDP stream each (Balman et al., 2012, section 4.2),
 * without writing steps to files first.
 *
 * A sender owns planes [z_begin, z_end) of a float32 volume of nx x ny x nz
 * values (x fastest, then y, then z) and sends each step of them as slab
 * `z_begin / slab_depth` to a `slabcast receive` stream. The packing, pacing,
 * GSO and wire format are the `slabcast shuffle`'s own (docs/wire-format.md).
 * No controller is needed: every packet names its step, and the receiver
 * publishes a step when it is whole (docs/shared-memory.md), so the ranks of a
 * simulation that call slabcast_send_step for the same step are in step.
 *
 * Every function returns SLABCAST_OK (0) or an error code; the message of the
 * calling thread's last error is slabcast_last_error().
 *
 * Thread safety: one sender is used by one thread at a time; different senders
 * are independent. */
#ifndef SLABCAST_SLABCAST_H
#define SLABCAST_SLABCAST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SLABCAST_API __attribute__((visibility("default")))
#else
#define SLABCAST_API
#endif

#define SLABCAST_VERSION_MAJOR 0
#define SLABCAST_VERSION_MINOR 1

/* A sender: opaque, made by slabcast_open, freed by slabcast_close. */
typedef struct slabcast_sender slabcast_sender;

typedef enum slabcast_status {
    SLABCAST_OK = 0,
    SLABCAST_ERROR_ARGUMENT = 1, /* a bad option or argument: the message names it */
    SLABCAST_ERROR_NETWORK = 2,  /* the destination cannot be resolved or reached, or a send failed */
    SLABCAST_ERROR_STATE = 3,    /* the sender was closed, or its sending thread failed */
    SLABCAST_ERROR_MEMORY = 4    /* the send queue could not be allocated */
} slabcast_status;

/* What send_step does when the queue is full (queue_steps > 0). */
typedef enum slabcast_queue_policy {
    SLABCAST_QUEUE_BLOCK = 0,      /* the caller waits for room: no step is lost */
    SLABCAST_QUEUE_DROP_OLDEST = 1 /* the oldest step not yet being sent is dropped (counted) */
} slabcast_queue_policy;

typedef struct slabcast_options {
    int64_t dims[3];         /* nx, ny, nz of the whole volume */
    int64_t z_begin, z_end;  /* the planes this sender owns: [z_begin, z_end) */
    int64_t slab_depth;      /* planes a slab (the receiver's --slab-depth); 0: z_end - z_begin */
    const char* destination; /* the receiver's stream: "HOST:PORT" ("[ADDR]:PORT" for IPv6) */
    const char* bind;        /* local address to send from; NULL: the kernel's choice */
    const char* rate;        /* per stream, e.g. "2.81G", "500M"; "0": unpaced; NULL: "2.81G" */
    const char* wire;        /* "run" (NULL, the default) or "quad" */
    const char* codec;       /* run packets: "none" (NULL, the default), "lz4", "zfp:RATE", "quant:BITS" */
    const char* order;       /* "scan" (NULL, the default), "morton" or "progressive" (coarse first) */
    int queue_steps;         /* 0: send_step sends before it returns; N > 0: it copies the step
                                into one of N buffers and returns, a thread sends them in order */
    slabcast_queue_policy queue_policy;
    int encode_threads;      /* threads packing the stream's packets, each a part of the slab, for a codec one
                                core cannot run at the rate, on 4 or more cores (not yet measured there;
                                slower than 1 on a 2-core host: docs/performance.md); 0 or 1 (the
                                default): the sending thread */
    const char* fec;         /* forward error correction: "K+M" or "K+M/DEPTH" (M parity datagrams for every
                                K, groups interleaved DEPTH deep, default 4; e.g. "200+22" for 5% random
                                loss): the receiver rebuilds up to M lost datagrams a group; NULL or "none":
                                off */
} slabcast_options;

/* Fills `options` with the defaults (every pointer NULL, queue_steps 0). */
SLABCAST_API void slabcast_options_init(slabcast_options* options);

/* The planes rank `rank` of `size` owns when nz planes are cut into slabs of
 * ceil(nz / size) planes (the last may be shorter, or empty when size does not
 * divide evenly: then *z_begin == *z_end and the rank sends nothing). */
SLABCAST_API int slabcast_rank_slab(int64_t nz, int rank, int size, int64_t* z_begin, int64_t* z_end,
                                    int64_t* slab_depth);

/* Checks the options, resolves the destination and opens the socket. */
SLABCAST_API int slabcast_open(const slabcast_options* options, slabcast_sender** sender);

/* Sends step `step` (>= 0): `values` holds the sender's (z_end - z_begin) * ny * nx
 * values, x fastest, contiguous. Synchronous (queue_steps 0): returns once every
 * packet is handed to the kernel, paced at the rate. Queued: returns once the
 * values are copied into a free buffer (or, with DROP_OLDEST, over the oldest
 * waiting step). */
SLABCAST_API int slabcast_send_step(slabcast_sender* sender, int32_t step, const float* values);

/* Waits until every queued step is sent (at once when synchronous). */
SLABCAST_API int slabcast_flush(slabcast_sender* sender);

typedef struct slabcast_stats {
    uint64_t steps_sent;    /* steps whose every packet was handed to the kernel */
    uint64_t steps_dropped; /* queued steps dropped by SLABCAST_QUEUE_DROP_OLDEST */
    uint64_t packets;       /* datagrams sent */
    uint64_t bytes;         /* datagram bytes sent, FEC's parity included */
    uint64_t packets_a_step;
    double send_seconds;    /* time spent sending steps (the sending thread's, when queued) */
} slabcast_stats;
SLABCAST_API int slabcast_get_stats(const slabcast_sender* sender, slabcast_stats* stats);

/* Sends what is queued (flush), stops the sending thread and frees the sender. NULL is fine. */
SLABCAST_API int slabcast_close(slabcast_sender* sender);

/* The calling thread's last error message ("" after success). */
SLABCAST_API const char* slabcast_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
