// The stream monitor's chart: Gbit/s per slab and in all (left axis) and the
// loss of the last finished step (right axis) over the last minute, like the
// paper's throughput figures (Balman et al., 2012, section 4). Drawn with
// VTK's chart classes, the ones ParaView's own line chart view uses: no
// further package or licence than ParaView's, and no OpenGL of its own beyond
// a small context view.
#pragma once

#include <QWidget>

#include "slabcast/stream_history.h"

class QVTKOpenGLNativeWidget;
class vtkChartXY;
class vtkContextView;
class vtkTable;

class pqSlabcastStreamChart : public QWidget
{
  Q_OBJECT
public:
  explicit pqSlabcastStreamChart(QWidget* parent = nullptr);
  ~pqSlabcastStreamChart() override;

  /// Redraws from `history` (every sample in its window).
  void show(const slabcast::StreamHistory& history);
  /// Points drawn now, summed over the series.
  int pointCount() const { return this->Points; }
  /// The chart as shown, as a PNG file; false if it could not be written.
  bool savePng(const QString& path);

private:
  QVTKOpenGLNativeWidget* Widget;
  vtkContextView* View;
  vtkChartXY* Chart;
  vtkTable* Table;
  std::vector<int> Columns; // slab indices charted, in column order
  int Points = 0;
};
