/* stream_slab: what a simulation adds to stream its volume into slabcast, with
 * libslabcast's C API (slabcast/slabcast.h). One sender, as one MPI rank would
 * have, owns the first slab of a 64x64x64 float32 volume, planes [0, 16), and
 * sends COUNT steps of it from FIRST on to a `slabcast receive` stream:
 *
 *   slabcast receive --name demo --dims 64,64,64 --slab-depth 16 --listen 127.0.0.1 --stream 0:9000
 *   stream_slab 127.0.0.1:9000 [FIRST [COUNT]]        (default: steps 0, 1, 2)
 *
 * Voxel i (i = x + 64 * (y + 64 * z)) holds step * 1e6 + i at each step, exact
 * in float32 at these sizes, so a reader can check every value it shows
 * (testing/install/test_install.py does, through the installed ParaView plugin).
 * Built against an installed slabcast with CMakeLists.txt beside this file
 * (find_package(slabcast)) or with pkg-config:
 *
 *   cc stream_slab.c $(pkg-config --cflags --libs slabcast) -o stream_slab
 */
#include <slabcast/slabcast.h>

#include <stdio.h>
#include <stdlib.h>

enum { NX = 64, NY = 64, NZ = 64, SLAB_DEPTH = 16 };

static int failed(const char* what) {
    fprintf(stderr, "stream_slab: %s: %s\n", what, slabcast_last_error());
    return 1;
}

int main(int argc, char** argv) {
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s HOST:PORT [FIRST_STEP [COUNT]]\n", argv[0]);
        return 2;
    }
    const int first = argc > 2 ? atoi(argv[2]) : 0;
    const int count = argc > 3 ? atoi(argv[3]) : 3;

    slabcast_options options;
    slabcast_options_init(&options);
    options.dims[0] = NX;
    options.dims[1] = NY;
    options.dims[2] = NZ;
    options.z_begin = 0; /* slab 0: a rank would take its planes from slabcast_rank_slab */
    options.z_end = SLAB_DEPTH;
    options.slab_depth = SLAB_DEPTH;
    options.destination = argv[1];
    options.rate = "500M"; /* paced, as a real stream shares its link: 256 KiB a step, ~4 ms */

    slabcast_sender* sender = NULL;
    if (slabcast_open(&options, &sender) != SLABCAST_OK) return failed("open");

    const size_t n = (size_t)NX * NY * SLAB_DEPTH;
    float* values = malloc(n * sizeof *values);
    if (!values) {
        slabcast_close(sender);
        fprintf(stderr, "stream_slab: out of memory\n");
        return 1;
    }
    int rc = 0;
    for (int step = first; step < first + count && rc == 0; ++step) {
        for (size_t i = 0; i < n; ++i) values[i] = (float)(step * 1e6 + (double)i);
        if (slabcast_send_step(sender, step, values) != SLABCAST_OK) rc = failed("send_step");
    }
    slabcast_stats stats;
    if (rc == 0 && slabcast_get_stats(sender, &stats) == SLABCAST_OK)
        printf("stream_slab: sent %llu steps, %llu packets, %llu bytes\n", (unsigned long long)stats.steps_sent,
               (unsigned long long)stats.packets, (unsigned long long)stats.bytes);
    free(values);
    if (slabcast_close(sender) != SLABCAST_OK && rc == 0) rc = failed("close");
    return rc;
}
