# The ParaView 5.11 SDK, found once for the reader plugin (plugin/) and the
# GUI tests' probe plugin (testing/plugin/probe).
# Only the server-manager pieces of ParaView are required: a bare
# find_package(ParaView) drags in configuration we do not need. The stream
# monitor panel (Qt) is built where ParaView's GUI SDK is found; pvbatch and
# pvserver hosts without it build and load the reader alone.
option(SLABCAST_MONITOR "build the Qt stream monitor panel where ParaView's GUI SDK is found" ON)
set(slabcast_gui_components)
if(SLABCAST_MONITOR)
  # ParaView's exported VTK targets name these without finding them; Debian's
  # find modules define neither hdf5::hdf5 nor NetCDF::NetCDF.
  find_package(LibXml2 QUIET)
  find_package(Boost QUIET)
  find_package(HDF5 QUIET COMPONENTS C HL)
  find_package(Qt5 QUIET COMPONENTS Widgets)
  if(LibXml2_FOUND AND Boost_FOUND AND HDF5_FOUND AND Qt5_FOUND)
    if(NOT TARGET hdf5::hdf5)
      add_library(hdf5::hdf5 INTERFACE IMPORTED)
      target_link_libraries(hdf5::hdf5 INTERFACE ${HDF5_C_LIBRARIES})
    endif()
    if(NOT TARGET NetCDF::NetCDF)
      add_library(NetCDF::NetCDF INTERFACE IMPORTED)
      target_link_libraries(NetCDF::NetCDF INTERFACE netcdf)
    endif()
    set(slabcast_gui_components pqApplicationComponents)
  endif()
endif()
find_package(ParaView 5.11 REQUIRED COMPONENTS RemotingCore RemotingServerManager RemotingViews
  OPTIONAL_COMPONENTS ${slabcast_gui_components})
if(TARGET ParaView::pqApplicationComponents)
  set(SLABCAST_HAVE_MONITOR ON)
  message(STATUS "slabcast: building the stream monitor panel (ParaView's Qt GUI SDK found)")
else()
  set(SLABCAST_HAVE_MONITOR OFF)
  message(STATUS "slabcast: no ParaView Qt GUI SDK (qtbase5-dev, libqt5opengl5-dev, ...): the reader without the stream monitor panel")
endif()

