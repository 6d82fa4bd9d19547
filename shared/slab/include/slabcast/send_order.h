// The send orders and fill rules by name, as the roles (shuffle --order,
// receive --fill), the sender library, the deployment file and the demo spell
// them: each name is checked here and nowhere else (docs/wire-format.md, "Send
// order"; docs/shared-memory.md, "Holes and ages").
#pragma once

#include <string>

namespace slabcast {

// Scan order, z-order (Morton; the paper's alternative, Balman et al., 2012,
// section 4.2), or coarse first (slabcast/progressive_rows.h).
enum class SendOrder { Scan, Morton, Progressive };
// "scan" | "morton" (or "zorder") | "progressive"; throws std::invalid_argument naming the text.
SendOrder parse_send_order(const std::string& text);

// Where a published step's missing values come from: the slab's previous
// publication, or first a coarser sample of the same step along the
// progressive order's hierarchy (fill_from_coarser).
enum class FillRule { Previous, Nearest };
// "previous" | "nearest"; throws std::invalid_argument naming the text.
FillRule parse_fill_rule(const std::string& text);

}  // namespace slabcast
