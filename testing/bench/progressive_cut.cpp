// A step cut short, exactly: every slab of a dataset's step sent in a send
// order, as the shuffler packs it (SlabWalker), and only the first share of
// each slab's packets handed to the receiver's core (SlabReceiver) in real
// shared memory, which publishes the step with its holes filled by a fill
// rule. Optionally the step before it arrives whole first (a slowly evolving
// simulation), or nothing does (a stream that starts, or a controller that
// jumps ahead). The slabs and descriptor stay in --shm-dir for ParaView to
// render (testing/bench/progressive_cut.py, ctest plugin_progressive); the
// values' error against the whole step is printed as one JSON line.
//
//   progressive_cut --dataset DIR --step S [--previous P] --slab-depth D --order scan|progressive
//                   --fill previous|nearest --share 0.25 --shm-dir DIR --name NAME [--wire run|quad]
//
// Sockets are left out so that the cut is exact; the same order over real UDP
// with the controller's cut is ctest e2e_pipeline's and e2e_netns's.
#include "receive/slab_receiver.h"
#include "shuffle/slab_walker.h"

#include "slabcast/dataset.h"
#include "slabcast/descriptor.h"
#include "slabcast/publication.h"
#include "slabcast/quad_packet.h"
#include "slabcast/slab_file.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

using namespace slabcast;

namespace {

std::vector<float> read_step(const Dataset& d, int number) {
    const DatasetStep* s = d.find_step(number);
    if (!s) throw std::runtime_error("the dataset has no step " + std::to_string(number));
    std::vector<float> v(static_cast<std::size_t>(d.dims.count()));
    std::ifstream in(d.step_path(*s), std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float))))
        throw std::runtime_error(d.step_path(*s) + ": shorter than the dataset's dims");
    return v;
}

// Every packet of slab `g`'s step `step`, in order.
std::vector<std::vector<std::uint8_t>> packets_of(const Dims& dims, const SlabGeometry& g, SendOrder order,
                                                  WireFormat wire, const std::vector<float>& volume, int step) {
    SlabWalker walker(dims, g.stored_z_begin, g.z_end, order, wire, {}, g.ghost_planes());
    std::vector<std::vector<std::uint8_t>> out;
    for (;;) {
        std::vector<std::uint8_t> p(quad::kMaxPacketBytes);
        if (wire == WireFormat::Quad) {
            const int n = walker.fill(p.data(), volume.data());
            if (n == 0) break;
            quad::write_header(p.data(), step, n);
            p.resize(quad::packet_bytes(n));
        } else {
            const auto got = walker.fill_run(p.data(), volume.data(), step, g.index);
            if (got.count == 0) break;
            p.resize(got.bytes);
        }
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"A step cut short after a share of its packets, published by the receiver's core"};
    std::string dataset_dir, order_text, fill_text, shm_dir, name, wire_text = "run";
    int step = 0, previous = -1, depth = 0;
    double share = 1.0;
    app.add_option("--dataset", dataset_dir)->required();
    app.add_option("--step", step)->required();
    app.add_option("--previous", previous, "a step that arrives whole before (default: none)");
    app.add_option("--slab-depth", depth)->required()->check(CLI::Range(1, 1 << 20));
    app.add_option("--order", order_text)->required();
    app.add_option("--fill", fill_text)->required();
    app.add_option("--wire", wire_text)->capture_default_str();
    app.add_option("--share", share, "share of each slab's packets that arrive")->required()->check(CLI::Range(0.0, 1.0));
    app.add_option("--shm-dir", shm_dir)->required();
    app.add_option("--name", name)->required();
    CLI11_PARSE(app, argc, argv);
    try {
        const Dataset d = read_dataset(dataset_dir);
        const SendOrder order = parse_send_order(order_text);
        const FillRule fill = parse_fill_rule(fill_text);
        const WireFormat wire = parse_wire_format(wire_text);
        const std::vector<float> truth = read_step(d, step);
        const std::vector<float> before = previous >= 0 ? read_step(d, previous) : std::vector<float>{};

        Descriptor desc;
        desc.name = name;
        desc.field = d.field;
        desc.dims = d.dims;
        desc.slab_depth = depth;
        desc.ghost_planes = 1;
        const int slabs = static_cast<int>((d.dims.nz + depth - 1) / depth);
        double squared = 0, lo = truth[0], hi = truth[0];
        std::uint64_t values = 0, holes = 0, coarse = 0, packets_sent = 0, packets_all = 0;
        for (int k = 0; k < slabs; ++k) {
            const SlabGeometry g = slab_geometry(d.dims, depth, k, 1);
            desc.slabs.push_back(SlabEntry{k, slab_file_name(name, k)});
            SlabMapping slab = SlabMapping::create(shm_dir + "/" + slab_file_name(name, k), d.dims, depth, g, d.field);
            SlabReceiver receiver(k, slab, [&](const StepReport& r) {
                if (r.step == step) coarse += r.coarse_filled, holes += r.holes;
            });
            receiver.set_fill(fill);
            if (previous >= 0) {
                for (const auto& p : packets_of(d.dims, g, order, wire, before, previous))
                    receiver.handle(p.data(), p.size(), 0);
                receiver.finish_current();
            }
            const auto packets = packets_of(d.dims, g, order, wire, truth, step);
            const auto n = static_cast<std::size_t>(std::ceil(share * static_cast<double>(packets.size())));
            for (std::size_t i = 0; i < n; ++i) receiver.handle(packets[i].data(), packets[i].size(), 1'000'000'000);
            receiver.finish_current();
            packets_sent += n;
            packets_all += packets.size();
            // The owned values' error against the whole step.
            const auto shown = newest_publication(slab);
            if (!shown || shown->step != step) throw std::runtime_error("slab " + std::to_string(k) + ": step not published");
            const float* v = slab.values(shown->buffer);
            for (std::int64_t z = g.z_begin; z < g.z_end; ++z)
                for (std::int64_t i = 0; i < d.dims.plane(); ++i) {
                    const float want = truth[static_cast<std::size_t>(z * d.dims.plane() + i)];
                    const double e = v[slab_offset(d.dims, g, i % d.dims.nx, i / d.dims.nx, z)] - want;
                    squared += e * e;
                    lo = std::min<double>(lo, want);
                    hi = std::max<double>(hi, want);
                    ++values;
                }
        }
        write_descriptor(shm_dir + "/" + name + ".slabcast", desc);
        std::cout << nlohmann::json{{"order", order_text}, {"fill", fill_text}, {"wire", wire_text},
                                    {"share", share}, {"previous", previous}, {"step", step},
                                    {"packets_sent", packets_sent}, {"packets", packets_all},
                                    {"holes", holes}, {"coarse_filled", coarse},
                                    {"value_rmse", std::sqrt(squared / static_cast<double>(values))},
                                    {"value_range", hi - lo}}
                         .dump()
                  << std::endl;
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "progressive_cut: " << e.what() << std::endl;
        return 1;
    }
}
