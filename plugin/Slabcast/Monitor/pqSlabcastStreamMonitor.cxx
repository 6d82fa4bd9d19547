#include "pqSlabcastStreamMonitor.h"

#include "pqSlabcastStreamChart.h"

#include "pqActiveObjects.h"
#include "pqApplicationCore.h"
#include "pqPipelineSource.h"
#include "pqServer.h"
#include "pqServerManagerModel.h"
#include "vtkNew.h"
#include "vtkSMPropertyHelper.h"
#include "vtkSMProxy.h"
#include "vtkSlabcastStreamInformation.h"

#include "slabcast/clock.h"
#include "slabcast/slab_figures.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QtDebug>

#include <cstring>

namespace
{
// Twice a second: the floor for a live panel, and cheap (one header
// read per slab on each rank, nothing re-executed).
constexpr int kPollMs = 500;

// Short headers keep the panel narrow beside the render view; the tooltips say what they mean.
const char* const kColumns[][2] = {
  { "Slab", "the slab (z range) and its stream; 'all': every slab" },
  { "Host", "where the slab's shared memory is (the data-server rank's host)" },
  { "Shown",
    "the step the render view shows of this slab ('no step': it holds none published; the line below says "
    "since when)" },
  { "Receiving", "the step being received now ('-': between steps)" },
  { "Gbit/s", "the receiver's rate for this stream over its last second" },
  { "Loss %", "records lost in the last finished step" },
  { "Age", "how long ago the step shown was published" },
  { "Latency",
    "sent->published of the newest step: from its sender's first packet to its publication here (the "
    "sender's clock against this host's: on two hosts, off by however far they are apart)" },
  { "Complete", "share of the step shown that arrived (the rest is shown from an older step)" },
  { "Packets", "packets the receiver placed, all steps" },
  { "Rejected", "malformed or out-of-slab packets" },
  { "Stale", "packets of a step already finished" },
  { "Dups", "records received twice in a step" },
  { "FEC",
    "forward error correction, all steps: datagrams rebuilt from parity / lost beyond repair ('-': the stream "
    "sends no FEC)" },
  { "Dropped", "steps not written because readers held every buffer" },
  { "Pins",
    "buffers readers held as the last step began / the slab's buffers (the most so far); at all but one the "
    "next pin drops a step. Hover a slab's cell for who pins what" },
};
constexpr int kColumnCount = sizeof(kColumns) / sizeof(kColumns[0]);

bool IsSlabcast(pqPipelineSource* source)
{
  return source && source->getProxy() && source->getProxy()->GetXMLName() &&
    std::strcmp(source->getProxy()->GetXMLName(), "SlabcastReader") == 0;
}

QString StepText(std::int64_t step)
{
  return step < 0 ? QString("-") : QString::number(step);
}

QString AgeText(double ms)
{
  if (ms < 0)
  {
    return "-";
  }
  return ms < 10000 ? QString("%1 ms").arg(ms, 0, 'f', 0) : QString("%1 s").arg(ms / 1000, 0, 'f', 1);
}

QStringList Row(const slabcast::SlabFigures& f, const QString& name)
{
  return { name, QString::fromStdString(f.host), f.no_step ? QString("no step") : StepText(f.shown_step),
    StepText(f.writing_step),
    QString::number(f.gbps, 'f', 2), QString::number(f.last_step_loss_percent, 'f', 3),
    AgeText(f.shown_age_ms), f.latency_ms < 0 ? QString("-") : AgeText(f.latency_ms),
    f.shown_step < 0 ? QString("-") : QString("%1%").arg(100 * f.shown_completeness, 0, 'f', 1),
    QString::number(f.packets), QString::number(f.rejected), QString::number(f.stale),
    QString::number(f.duplicates),
    f.repaired || f.unrepaired ? QString("%1 / %2").arg(f.repaired).arg(f.unrepaired) : QString("-"),
    QString::number(f.dropped_steps),
    f.buffers ? QString("%1/%2 (%3)").arg(f.pinned).arg(f.buffers).arg(f.pinned_peak) : QString("-") };
}
} // namespace

//------------------------------------------------------------------------------
pqSlabcastStreamMonitor::pqSlabcastStreamMonitor(QWidget* parent, Qt::WindowFlags flags)
  : QDockWidget(parent, flags)
  , Table(new QTableWidget(0, kColumnCount))
  , Chart(new pqSlabcastStreamChart)
  , Status(new QLabel("no slabcast source"))
  , Pause(new QPushButton("Pause"))
  , Timer(new QTimer(this))
{
  // ParaView renames a plugin's dock window after its class when it docks it.
  this->setObjectName("pqSlabcastStreamMonitor");
  this->setWindowTitle("Slabcast Stream Monitor");

  this->Status->setObjectName("slabcastStreamStatus");
  this->Table->setObjectName("slabcastStreamTable");
  for (int c = 0; c < kColumnCount; ++c)
  {
    auto* header = new QTableWidgetItem(kColumns[c][0]);
    header->setToolTip(kColumns[c][1]);
    this->Table->setHorizontalHeaderItem(c, header);
  }
  this->Table->verticalHeader()->setVisible(false);
  this->Table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  this->Table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

  this->Pause->setObjectName("slabcastPause");
  this->Pause->setCheckable(true);
  this->Pause->setToolTip("Stop following new steps (the reader's Pause); the figures keep updating");
  auto* saveChart = new QPushButton("Save chart...");
  saveChart->setObjectName("slabcastSaveChart");
  auto* saveSeries = new QPushButton("Save CSV...");
  saveSeries->setObjectName("slabcastSaveSeries");

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(this->Pause);
  buttons->addStretch();
  buttons->addWidget(saveChart);
  buttons->addWidget(saveSeries);
  auto* body = new QWidget(this);
  body->setMinimumWidth(420); // the table's first columns and the chart readable when docked
  auto* layout = new QVBoxLayout(body);
  layout->addWidget(this->Status);
  layout->addWidget(this->Table, 1);
  layout->addWidget(this->Chart, 1);
  layout->addLayout(buttons);
  this->setWidget(body);

  QObject::connect(this->Pause, &QPushButton::toggled, this, &pqSlabcastStreamMonitor::togglePause);
  QObject::connect(saveChart, &QPushButton::clicked, this, &pqSlabcastStreamMonitor::askSaveChart);
  QObject::connect(saveSeries, &QPushButton::clicked, this, &pqSlabcastStreamMonitor::askSaveSeries);
  QObject::connect(this->Timer, &QTimer::timeout, this, &pqSlabcastStreamMonitor::poll);

  pqServerManagerModel* model = pqApplicationCore::instance()->getServerManagerModel();
  QObject::connect(
    model, &pqServerManagerModel::sourceAdded, this, &pqSlabcastStreamMonitor::sourceAdded);
  QObject::connect(&pqActiveObjects::instance(), &pqActiveObjects::sourceChanged, this,
    &pqSlabcastStreamMonitor::activeSourceChanged);
  for (pqPipelineSource* source : model->findItems<pqPipelineSource*>())
  {
    if (IsSlabcast(source))
    {
      this->follow(source);
    }
  }
  this->Timer->start(kPollMs);
}

pqSlabcastStreamMonitor::~pqSlabcastStreamMonitor() = default;

//------------------------------------------------------------------------------
int pqSlabcastStreamMonitor::chartPoints() const
{
  return this->Chart->pointCount();
}

QString pqSlabcastStreamMonitor::sourceName() const
{
  return this->Source ? this->Source->getSMName() : QString();
}

//------------------------------------------------------------------------------
void pqSlabcastStreamMonitor::sourceAdded(pqPipelineSource* source)
{
  if (IsSlabcast(source))
  {
    this->follow(source);
    this->show();
    this->raise();
  }
}

void pqSlabcastStreamMonitor::activeSourceChanged(pqPipelineSource* source)
{
  // Another kind of source made active keeps the panel on its slabcast source.
  if (IsSlabcast(source))
  {
    this->follow(source);
  }
}

void pqSlabcastStreamMonitor::follow(pqPipelineSource* source)
{
  if (this->Source == source)
  {
    return;
  }
  this->Source = source;
  this->History.clear();
  const QSignalBlocker quiet(this->Pause);
  const bool paused = vtkSMPropertyHelper(source->getProxy(), "Pause").GetAsInt() != 0;
  this->Pause->setChecked(paused);
  this->Pause->setText(paused ? "Resume" : "Pause");
}

//------------------------------------------------------------------------------
void pqSlabcastStreamMonitor::poll()
{
  if (!this->Source)
  {
    this->Status->setText("no slabcast source");
    this->Table->setRowCount(0);
    return;
  }
  this->refreshSteps();
  if (!this->isVisible())
  {
    return;
  }
  this->showFigures();
}

void pqSlabcastStreamMonitor::refreshSteps()
{
  // One process follows publications by itself (the reader's GetMTime). Several
  // ranks showing whole steps move on only together, in the reader's Refresh.
  pqServer* server = this->Source->getServer();
  vtkSMProxy* proxy = this->Source->getProxy();
  if (!server || server->getNumberOfPartitions() <= 1 ||
    vtkSMPropertyHelper(proxy, "Completeness").GetAsInt() != 0 ||
    vtkSMPropertyHelper(proxy, "Pause").GetAsInt() != 0)
  {
    return;
  }
  proxy->UpdatePropertyInformation(proxy->GetProperty("NeedsUpdate"));
  if (vtkSMPropertyHelper(proxy, "NeedsUpdate").GetAsInt() != 1)
  {
    return;
  }
  proxy->InvokeCommand("Refresh");
  proxy->MarkModified(proxy);
  this->Source->renderAllViews();
}

void pqSlabcastStreamMonitor::showFigures()
{
  QElapsedTimer busy;
  busy.start();
  vtkNew<vtkSlabcastStreamInformation> info;
  this->Source->getProxy()->GatherInformation(info);
  std::vector<slabcast::SlabFigures> slabs;
  for (int i = 0; i < info->GetNumberOfSlabs(); ++i)
  {
    slabs.push_back(info->GetSlab(i));
  }
  const bool newSecond = this->History.add(slabs);
  ++this->Updates;

  this->Table->setRowCount(static_cast<int>(slabs.size()) + (slabs.empty() ? 0 : 1));
  auto put = [this](int row, const QStringList& cells) {
    for (int c = 0; c < cells.size(); ++c)
    {
      QTableWidgetItem* item = this->Table->item(row, c);
      if (!item)
      {
        item = new QTableWidgetItem;
        item->setTextAlignment(c < 2 ? Qt::AlignLeft | Qt::AlignVCenter : Qt::AlignRight | Qt::AlignVCenter);
        this->Table->setItem(row, c, item);
      }
      item->setText(cells[c]);
    }
  };
  for (std::size_t i = 0; i < slabs.size(); ++i)
  {
    put(static_cast<int>(i), Row(slabs[i], QString::number(slabs[i].slab)));
    this->Table->item(static_cast<int>(i), kColumnCount - 1)
      ->setToolTip(QString::fromStdString(slabs[i].readers));
  }
  if (!slabs.empty())
  {
    slabcast::SlabFigures total = slabcast::total_figures(slabs);
    total.host = "";
    put(static_cast<int>(slabs.size()), Row(total, "all"));
  }
  if (newSecond)
  {
    this->Chart->show(this->History);
  }
  // A slab with no published step holds the whole view empty: said here by
  // name; and before a step is dropped, the readers that will have dropped it.
  QString missing;
  const std::int64_t now = slabcast::realtime_ns();
  for (const slabcast::SlabFigures& f : slabs)
  {
    if (f.no_step)
    {
      missing += "\n" + QString::fromStdString(slabcast::no_step_text(f, now));
    }
    if (f.buffers_nearly_all_pinned())
    {
      missing += QString("\nslab %1: readers held %2 of its %3 buffers as a step began: the next pin drops a "
                         "step (receive --readers or --buffers); pinning now: %4")
                   .arg(f.slab)
                   .arg(f.pinned_peak)
                   .arg(f.buffers)
                   .arg(QString::fromStdString(f.readers));
    }
  }
  this->Status->setText(QString("%1: %2 slab(s)%3, updated %4%5")
                          .arg(this->Source->getSMName())
                          .arg(slabs.size())
                          .arg(this->Pause->isChecked() ? ", paused" : "")
                          .arg(QTime::currentTime().toString("hh:mm:ss.zzz"))
                          .arg(missing));
  this->BusyMs += busy.nsecsElapsed() / 1e6;
}

//------------------------------------------------------------------------------
void pqSlabcastStreamMonitor::togglePause(bool paused)
{
  this->Pause->setText(paused ? "Resume" : "Pause");
  if (!this->Source)
  {
    return;
  }
  vtkSMProxy* proxy = this->Source->getProxy();
  vtkSMPropertyHelper(proxy, "Pause").Set(paused ? 1 : 0);
  proxy->UpdateVTKObjects();
}

bool pqSlabcastStreamMonitor::saveChart(const QString& path)
{
  if (!this->Chart->savePng(path))
  {
    qWarning() << "Slabcast Stream Monitor: cannot write the chart to" << path;
    return false;
  }
  return true;
}

bool pqSlabcastStreamMonitor::saveSeries(const QString& path)
{
  QFile file(path);
  const std::string csv = this->History.csv();
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
    file.write(csv.data(), static_cast<qint64>(csv.size())) != static_cast<qint64>(csv.size()))
  {
    qWarning() << "Slabcast Stream Monitor: cannot write the series to" << path;
    return false;
  }
  return true;
}

void pqSlabcastStreamMonitor::askSaveChart()
{
  const QString path = QFileDialog::getSaveFileName(
    this, "Save the stream chart", "slabcast-stream.png", "PNG image (*.png)");
  if (!path.isEmpty())
  {
    this->saveChart(path);
  }
}

void pqSlabcastStreamMonitor::askSaveSeries()
{
  const QString path = QFileDialog::getSaveFileName(
    this, "Save the stream series", "slabcast-stream.csv", "CSV (*.csv)");
  if (!path.isEmpty())
  {
    this->saveSeries(path);
  }
}
