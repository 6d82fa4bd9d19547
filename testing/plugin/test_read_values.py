"""ctest plugin_read_values: the plugin loads in pvpython, OpenDataFile picks it,
values read back equal the source, and one-slab reads are zero-copy; "Whole
steps" shows the published step while the next is written, "Newest data" the
one being written (issue 17)."""
import plugin_testlib as t


def body():
    with t.shm_dir("values") as d:
        multi = t.write_volume(d, "multi", (64, 48, 40), 10)
        single = t.write_volume(d, "single", (32, 16, 8), 8)
        out, _ = t.pvpython("pv_read_values.py", multi, "64,48,40", 10, single, "32,16,8")
        t.log(out)
        t.check("PV_READ_VALUES_OK" in out, "pv_read_values.py did not finish")
        live = t.write_volume(d, "live", (16, 8, 32), 8, pattern="constant", step=1, repaired=5)
        t.write_volume(d, "live", (16, 8, 32), 8, pattern="constant", step=2, unpublished=True)
        out, _ = t.pvpython("pv_completeness.py", live, 4)
        t.log(out)
        t.check("PV_COMPLETENESS_OK" in out, "pv_completeness.py did not finish")


t.main(body)
