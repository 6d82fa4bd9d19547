// The Slabcast Stream Monitor: a dock panel in ParaView's GUI that shows, for
// the active slabcast source, what otherwise only the daemons' terminals show:
// per slab the step shown and the step being received, Gbit/s, the loss of the
// last finished step, the step's age and the receiver's counters, an all-slabs
// row, and a chart of the last minute. The SC11 booth showed the link's rate
// beside the picture (Balman et al., 2012, section 4).
//
// The figures come from the server side (vtkSlabcastStreamInformation, gathered
// from every data-server rank), twice a second, without re-executing the
// pipeline. With several server ranks and whole steps, the same timer also
// moves the view to a new step when one is published (the reader's Refresh,
// collective on the ranks), which ParaView's live-source timer cannot do.
#pragma once

#include <QDockWidget>
#include <QPointer>

#include "slabcast/stream_history.h"

class QLabel;
class QPushButton;
class QTableWidget;
class QTimer;
class pqPipelineSource;
class pqSlabcastStreamChart;

class pqSlabcastStreamMonitor : public QDockWidget
{
  Q_OBJECT
  /// Figures gathered so far and chart points drawn (tests read these by name).
  Q_PROPERTY(int updates READ updates)
  Q_PROPERTY(int chartPoints READ chartPoints)
  Q_PROPERTY(QString sourceName READ sourceName)
  /// Milliseconds the GUI spent in the panel's updates, summed (gather, table, chart).
  Q_PROPERTY(double busyMs READ busyMs)

public:
  pqSlabcastStreamMonitor(QWidget* parent = nullptr, Qt::WindowFlags flags = Qt::WindowFlags());
  ~pqSlabcastStreamMonitor() override;

  int updates() const { return this->Updates; }
  int chartPoints() const;
  QString sourceName() const;
  double busyMs() const { return this->BusyMs; }

public Q_SLOTS:
  /// The chart as a PNG file, the series as CSV; false on failure (a message
  /// goes to ParaView's output window).
  bool saveChart(const QString& path);
  bool saveSeries(const QString& path);

private Q_SLOTS:
  void sourceAdded(pqPipelineSource* source);
  void activeSourceChanged(pqPipelineSource* source);
  void poll();
  void togglePause(bool paused);
  void askSaveChart();
  void askSaveSeries();

private:
  void follow(pqPipelineSource* source);
  void showFigures();
  void refreshSteps();

  QPointer<pqPipelineSource> Source;
  QTableWidget* Table;
  pqSlabcastStreamChart* Chart;
  QLabel* Status;
  QPushButton* Pause;
  QTimer* Timer;
  slabcast::StreamHistory History;
  int Updates = 0;
  double BusyMs = 0;
};
