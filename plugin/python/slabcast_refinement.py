"""Which level of detail each of a step's progressive frames draws (the
plugin's CPU ray marcher, Slabcast Volume; slabcast_render.py and the GUI's
slabcast_gui_open.py): level L marches 1/L^2 of the pixels at L times the
sample distance, 1 being full resolution.

A new step's first frame is at the coarsest level (the first pixel, as soon
as it can be), and each next frame at half the last's, down to full
resolution. A level between is skipped when its last march took more than a
quarter of the last full frame's and the full frame takes a second or more:
the preview would hold the full picture back by more than a quarter, for a
picture little better than the level before it. At 1024^3 on 2 cores the
march is bound by memory and 1/2 costs 0.35-0.6 of a full frame (1/8, 1/4,
1/2 and full: about 0.2-0.3, 0.2-0.5, 0.7-1.4 and 2.0-2.5 s with the next
step streaming beside them), so it is skipped and 1/4 is not; at 256^3 a
full frame is 0.2-0.3 s and every level is drawn. Needs nothing of ParaView,
so that it is tested on its own (testing/plugin/test_refinement.py).
"""

SKIP_SHARE = 1.0 / 4  # a level costing more than this of the full frame is skipped
SKIP_FROM_S = 1.0     # only when the full frame takes at least this long


class Refinement:
    """The levels of one view's frames. Call next(new) before each frame and
    marched(level, seconds) after a frame that marched (its level's first
    frame for a step, not cut for a newer step), with the frame's draw time."""

    def __init__(self, coarsest):
        self.coarsest = max(1, int(coarsest))
        self.level = None
        self.cost = {}  # the last march's seconds at each level

    def next(self, new):
        """The level of the next frame; `new`: it is a new step's first."""
        if new or self.level is None:
            self.level = self.coarsest
            return self.level
        level = max(1, self.level // 2)
        full = self.cost.get(1)
        while level > 1 and full is not None and full >= SKIP_FROM_S and self.cost.get(level, 0.0) > SKIP_SHARE * full:
            level //= 2
        self.level = level
        return self.level

    def levels(self):
        """Every level a frame may draw, coarsest first."""
        levels = [self.coarsest]
        while levels[-1] > 1:
            levels.append(max(1, levels[-1] // 2))
        return tuple(levels)

    def marched(self, level, seconds):
        self.cost[level] = seconds
