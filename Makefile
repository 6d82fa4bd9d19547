# The two front-door commands (see README.md):
#   make demo   the live demo on a built-in dataset
#   make test   the whole test suite
# Each installs its Debian dependencies when missing, then configures and builds.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps build test bench soak scale demo package clean

all: build

deps:
	bash testing/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j$(JOBS)

# Benchmarks print figures and assert nothing about time, the soak test
# takes ten minutes and the scale test 20 GiB: none is in the test run. It ends by counting the
# skipped tests; under CI (CI=true) any skipped test fails it.
test: build
	bash testing/run-tests.sh $(BUILD) -LE "benchmark|soak|scale"

# SOAK_MINUTES (default 10) sets how long.
SOAK_MINUTES ?= 10
soak: build
	cd $(BUILD) && SLABCAST_SOAK_SECONDS=$$(( $(SOAK_MINUTES) * 60 )) \
		ctest --output-on-failure -L soak -V --timeout $$(( $(SOAK_MINUTES) * 60 + 600 ))

# The SC11 configuration at full size: 1024^3, 32 streams, 2 pvbatch ranks
# (about 20 GiB of memory; the dataset is generated once into data/cache).
scale: build
	cd $(BUILD) && ctest --output-on-failure -L scale -V

# The benchmarks are ctest tests labelled benchmark (testing/bench/CMakeLists.txt):
# this is `ctest -L benchmark` once their extra tools are installed.
bench: deps
	bash testing/install-deps.sh --bench
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -L benchmark -V

# The live demo: ParaView's GUI when there is a display, else frames in demo-output/.
# Pass options through DEMO_ARGS, e.g. make demo DEMO_ARGS="--head-to-head --forever".
demo: build
	$(BUILD)/server/slabcast demo --cache data/cache $(DEMO_ARGS)

# A Debian package of everything `cmake --install` installs (cmake/packaging.cmake),
# from a build tree of its own with prefix /usr, Debian's layout (the plugin
# beside Debian's ParaView plugins): $(PKG_BUILD)/slabcast_VERSION_ARCH.deb.
PKG_BUILD ?= build-deb
package: deps
	cmake -S . -B $(PKG_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr -DSLABCAST_BUILD_TESTS=OFF
	cmake --build $(PKG_BUILD) -j$(JOBS)
	cd $(PKG_BUILD) && cpack -G DEB

clean:
	rm -rf $(BUILD)
