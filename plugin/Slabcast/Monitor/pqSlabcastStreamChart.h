// The stream monitor's chart, over the last minute: above, Gbit/s per slab and
// in all (left axis) and the loss of the last finished step (right axis), like
// the paper's throughput figures (Balman et al., 2012, section 4); below, the
// newest step's sent->published, the transfer part of the paper's 3.9 s from
// send to picture (section 4), in seconds (its slowest slab). Drawn with
// VTK's chart classes, the ones ParaView's own line chart view uses: no
// further package or licence than ParaView's, and no OpenGL of its own beyond
// a small context view.
#pragma once

#include <QWidget>

#include "slabcast/stream_history.h"

class QVTKOpenGLNativeWidget;
class vtkChartMatrix;
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
  vtkChartMatrix* Matrix; // the two charts, one above the other
  vtkChartXY* Chart;      // rates and loss
  vtkChartXY* Latency;    // sent->published
  vtkTable* Table;
  std::vector<int> Columns; // slab indices charted, in column order
  int Points = 0;
};
