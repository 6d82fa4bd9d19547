#include "slabcast/send_order.h"

#include <stdexcept>

namespace slabcast {

SendOrder parse_send_order(const std::string& text) {
    if (text == "scan") return SendOrder::Scan;
    if (text == "morton" || text == "zorder") return SendOrder::Morton;
    if (text == "progressive") return SendOrder::Progressive;
    throw std::invalid_argument("order '" + text + "': expected scan, morton or progressive");
}

FillRule parse_fill_rule(const std::string& text) {
    if (text == "previous") return FillRule::Previous;
    if (text == "nearest") return FillRule::Nearest;
    throw std::invalid_argument("fill '" + text + "': expected previous or nearest");
}

}  // namespace slabcast
