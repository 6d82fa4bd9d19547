// Z-order (Morton) over a box of cells, the paper's alternative to scan order
// (Balman et al., 2012, section 4.2): a prefix of the walk covers a compact
// region of the box rather than its first rows. The box need not be a power of
// two on any side: the walk descends an octree over the next power of two and
// skips octants that lie wholly outside the box.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace slabcast {

class MortonWalk {
public:
    using Cell = std::array<std::int32_t, 3>;  // x, y, z

    MortonWalk() = default;
    explicit MortonWalk(const Cell& extent) : extent_(extent) { reset(); }

    void reset() {
        stack_.clear();
        if (extent_[0] <= 0 || extent_[1] <= 0 || extent_[2] <= 0) return;
        std::int32_t size = 1;
        while (size < std::max({extent_[0], extent_[1], extent_[2]})) size *= 2;
        stack_.push_back(Node{{0, 0, 0}, size});
    }

    // The next cell inside the box, x varying fastest; false at the end.
    bool next(Cell& cell) {
        while (!stack_.empty()) {
            const Node node = stack_.back();
            stack_.pop_back();
            if (node.at[0] >= extent_[0] || node.at[1] >= extent_[1] || node.at[2] >= extent_[2]) continue;
            if (node.size == 1) {
                cell = node.at;
                return true;
            }
            const std::int32_t h = node.size / 2;
            // Children in reverse Morton order (x is the lowest bit) so child 0 pops first.
            for (int c = 7; c >= 0; --c)
                stack_.push_back(Node{{node.at[0] + (c & 1 ? h : 0), node.at[1] + (c & 2 ? h : 0),
                                       node.at[2] + (c & 4 ? h : 0)},
                                      h});
        }
        return false;
    }

private:
    struct Node {
        Cell at;
        std::int32_t size;
    };
    Cell extent_{0, 0, 0};
    std::vector<Node> stack_;  // octants still to visit
};

}  // namespace slabcast
