"""Which level each progressive frame draws (plugin/python/slabcast_refinement.py):
a new step starts at the coarsest level and halves it frame by frame; a level
between is skipped only when its last march took more than a quarter of a full
frame of a second or more, and never before a full frame was timed. Needs no
ParaView (the module imports none)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plugin", "python"))
from slabcast_refinement import SKIP_FROM_S, SKIP_SHARE, Refinement  # noqa: E402


def step(refinement, costs, frames):
    """The levels of a new step's first `frames` frames, each frame's march timed at costs[level]."""
    levels = []
    for i in range(frames):
        before = refinement.level
        level = refinement.next(i == 0)
        if i == 0 or level != before:
            refinement.marched(level, costs[level])
        levels.append(level)
    return levels


class RefinementTest(unittest.TestCase):
    def test_level_by_level_until_a_full_frame_is_timed(self):
        r = Refinement(8)
        self.assertEqual(r.levels(), (8, 4, 2, 1))
        self.assertEqual(step(r, {8: 0.3, 4: 0.5, 2: 1.5, 1: 2.1}, 5), [8, 4, 2, 1, 1])

    def test_a_level_dearer_than_a_third_of_a_slow_full_frame_is_skipped(self):
        r = Refinement(8)
        costs = {8: 0.3, 4: 0.5, 2: 1.5, 1: 2.1}  # 1024^3 on 2 cores, the next step streaming
        step(r, costs, 4)
        self.assertEqual(step(r, costs, 4), [8, 4, 1, 1])
        # Both between: straight from the coarsest to full resolution.
        r.marched(4, SKIP_SHARE * 2.1 + 0.01)
        self.assertEqual(step(r, {**costs, 4: 0.8}, 3), [8, 1, 1])

    def test_every_level_when_the_full_frame_is_quick(self):
        r = Refinement(4)
        costs = {4: 0.06, 2: 0.15, 1: 0.2}  # 256^3: the fixed costs of a frame make 1/2 near full's
        step(r, costs, 3)
        self.assertLess(costs[1], SKIP_FROM_S)
        self.assertEqual(step(r, costs, 4), [4, 2, 1, 1])

    def test_a_skipped_level_comes_back_once_full_frames_slow_down(self):
        r = Refinement(4)
        step(r, {4: 0.2, 2: 0.5, 1: 1.2}, 3)
        self.assertEqual(step(r, {4: 0.2, 2: 0.5, 1: 1.2}, 3), [4, 1, 1])
        r.marched(1, 2.4)  # the full frame now 2.4 s: 1/2's 0.5 s is worth drawing first
        self.assertEqual(step(r, {4: 0.2, 2: 0.5, 1: 2.4}, 3), [4, 2, 1])

    def test_no_coarser_than_full_is_full(self):
        r = Refinement(1)
        self.assertEqual(r.levels(), (1,))
        self.assertEqual(step(r, {1: 5.0}, 3), [1, 1, 1])


if __name__ == "__main__":
    unittest.main()
