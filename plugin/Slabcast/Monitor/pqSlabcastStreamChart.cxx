#include "pqSlabcastStreamChart.h"

#include "QVTKOpenGLNativeWidget.h"
#include "vtkAxis.h"
#include "vtkChartLegend.h"
#include "vtkChartMatrix.h"
#include "vtkChartXY.h"
#include "vtkContextScene.h"
#include "vtkContextView.h"
#include "vtkDoubleArray.h"
#include "vtkGenericOpenGLRenderWindow.h"
#include "vtkPen.h"
#include "vtkPlot.h"
#include "vtkRenderer.h"
#include "vtkTable.h"
#include "vtkTextProperty.h"
#include "vtkVector.h"

#include <QImage>

#include <algorithm>
#include <initializer_list>
#include <QVBoxLayout>

namespace
{
// Distinct colours for up to 8 slabs, then repeated; the total is white.
const unsigned char kSlabColours[8][3] = { { 31, 119, 180 }, { 255, 127, 14 }, { 44, 160, 44 },
  { 214, 39, 40 }, { 148, 103, 189 }, { 140, 86, 75 }, { 227, 119, 194 }, { 188, 189, 34 } };

vtkDoubleArray* NewColumn(const char* name, vtkIdType rows)
{
  vtkDoubleArray* a = vtkDoubleArray::New();
  a->SetName(name);
  a->SetNumberOfTuples(rows);
  return a;
}

void LightAxes(vtkChartXY* chart, std::initializer_list<int> axes)
{
  for (int axis : axes)
  {
    chart->GetAxis(axis)->GetTitleProperties()->SetColor(0.9, 0.9, 0.9);
    chart->GetAxis(axis)->GetLabelProperties()->SetColor(0.9, 0.9, 0.9);
  }
}

// An axis from 0 to a little above `top` (at least `least`): a rate, a loss or
// a latency read against a floating origin looks larger than it is.
void FromZero(vtkAxis* axis, double top, double least)
{
  axis->SetBehavior(vtkAxis::FIXED);
  axis->SetRange(0, std::max(least, 1.15 * top));
}
} // namespace

pqSlabcastStreamChart::pqSlabcastStreamChart(QWidget* parent)
  : QWidget(parent)
  , Widget(new QVTKOpenGLNativeWidget(this))
  , View(vtkContextView::New())
  , Matrix(vtkChartMatrix::New())
  , Chart(vtkChartXY::New())
  , Latency(vtkChartXY::New())
  , Table(vtkTable::New())
{
  this->setObjectName("slabcastStreamChart");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(this->Widget);
  this->setMinimumHeight(260);

  vtkNew<vtkGenericOpenGLRenderWindow> window;
  this->Widget->setRenderWindow(window);
  this->View->SetRenderWindow(window);
  this->View->GetRenderer()->SetBackground(0.12, 0.12, 0.14);
  this->View->GetScene()->AddItem(this->Matrix);
  this->Matrix->SetSize(vtkVector2i(1, 2));
  this->Matrix->SetChart(vtkVector2i(0, 1), this->Chart); // row 0 is the bottom one
  this->Matrix->SetChart(vtkVector2i(0, 0), this->Latency);
  this->Chart->SetShowLegend(true);
  this->Chart->GetLegend()->SetHorizontalAlignment(vtkChartLegend::LEFT);
  this->Chart->GetLegend()->SetVerticalAlignment(vtkChartLegend::TOP);
  this->Chart->GetAxis(vtkAxis::BOTTOM)->SetTitle(""); // the lower chart names the shared time axis
  this->Chart->GetAxis(vtkAxis::LEFT)->SetTitle("Gbit/s");
  this->Chart->GetAxis(vtkAxis::RIGHT)->SetTitle("loss % (last step)");
  LightAxes(this->Chart, { vtkAxis::BOTTOM, vtkAxis::LEFT, vtkAxis::RIGHT });
  this->Latency->SetShowLegend(false);
  this->Latency->GetAxis(vtkAxis::BOTTOM)->SetTitle("seconds (last minute)");
  this->Latency->GetAxis(vtkAxis::LEFT)->SetTitle("sent->published s");
  LightAxes(this->Latency, { vtkAxis::BOTTOM, vtkAxis::LEFT });
}

pqSlabcastStreamChart::~pqSlabcastStreamChart()
{
  this->Table->Delete();
  this->Latency->Delete();
  this->Chart->Delete();
  this->Matrix->Delete();
  this->View->Delete();
}

void pqSlabcastStreamChart::show(const slabcast::StreamHistory& history)
{
  const auto& samples = history.samples();
  const vtkIdType rows = static_cast<vtkIdType>(samples.size());
  const std::vector<int> slabs = history.slabs();
  const bool sameColumns = slabs == this->Columns;

  vtkNew<vtkTable> table;
  vtkDoubleArray* t = NewColumn("seconds", rows);
  vtkDoubleArray* total = NewColumn("all slabs", rows);
  vtkDoubleArray* loss = NewColumn("loss %", rows);
  vtkDoubleArray* latency = NewColumn("sent->published s", rows);
  std::vector<vtkDoubleArray*> perSlab;
  for (int k : slabs)
  {
    perSlab.push_back(NewColumn(("slab " + std::to_string(k)).c_str(), rows));
  }
  for (vtkIdType r = 0; r < rows; ++r)
  {
    const slabcast::StreamSample& s = samples[static_cast<std::size_t>(r)];
    t->SetValue(r, history.seconds(static_cast<std::size_t>(r)));
    total->SetValue(r, s.total_gbps);
    loss->SetValue(r, s.loss_percent);
    // No stamp yet (a sender without step stamps): 0, at the axis, not a gap
    // that vtkChartXY would join across.
    latency->SetValue(r, s.latency_ms > 0 ? s.latency_ms / 1000 : 0.0);
    for (std::size_t c = 0; c < slabs.size(); ++c)
    {
      const auto it = s.slab_gbps.find(slabs[c]);
      perSlab[c]->SetValue(r, it != s.slab_gbps.end() ? it->second : 0.0);
    }
  }
  for (vtkDoubleArray* a : { t, total, loss, latency })
  {
    table->AddColumn(a);
    a->Delete();
  }
  for (vtkDoubleArray* a : perSlab)
  {
    table->AddColumn(a);
    a->Delete();
  }
  this->Table->ShallowCopy(table);
  if (rows < 2)
  {
    // A line needs two points: nothing to draw before the second sample.
    this->Chart->ClearPlots();
    this->Latency->ClearPlots();
    this->Points = 0;
    this->Widget->renderWindow()->Render();
    return;
  }

  if (!sameColumns || this->Chart->GetNumberOfPlots() == 0)
  {
    this->Chart->ClearPlots();
    this->Columns = slabs;
    for (std::size_t c = 0; c < slabs.size(); ++c)
    {
      vtkPlot* p = this->Chart->AddPlot(vtkChart::LINE);
      p->SetInputData(this->Table, 0, static_cast<vtkIdType>(4 + c));
      const unsigned char* rgb = kSlabColours[c % 8];
      p->SetColor(rgb[0], rgb[1], rgb[2], 255);
      p->SetWidth(1.5);
    }
    vtkPlot* all = this->Chart->AddPlot(vtkChart::LINE);
    all->SetInputData(this->Table, 0, 1);
    all->SetColor(240, 240, 240, 255);
    all->SetWidth(2.5);
    vtkPlot* l = this->Chart->AddPlot(vtkChart::LINE);
    l->SetInputData(this->Table, 0, 2);
    l->SetColor(230, 60, 60, 255);
    l->GetPen()->SetLineType(vtkPen::DASH_LINE);
    this->Chart->SetPlotCorner(l, 1); // right axis
    this->Latency->ClearPlots();
    vtkPlot* sent = this->Latency->AddPlot(vtkChart::LINE);
    sent->SetInputData(this->Table, 0, 3);
    sent->SetColor(90, 200, 250, 255);
    sent->SetWidth(2.0);
  }
  double topRate = 0, topLoss = 0, topLatency = 0;
  for (const auto& s : samples)
  {
    topRate = std::max(topRate, s.total_gbps);
    topLoss = std::max(topLoss, s.loss_percent);
    topLatency = std::max(topLatency, s.latency_ms / 1000);
  }
  FromZero(this->Chart->GetAxis(vtkAxis::LEFT), topRate, 1.0);
  FromZero(this->Chart->GetAxis(vtkAxis::RIGHT), topLoss, 1.0);
  this->Chart->GetAxis(vtkAxis::RIGHT)->SetGridVisible(false); // one grid, the rate's
  FromZero(this->Latency->GetAxis(vtkAxis::LEFT), topLatency, 0.1);
  this->Points = static_cast<int>(rows * static_cast<vtkIdType>(slabs.size() + 3));
  this->Chart->RecalculateBounds();
  this->Latency->RecalculateBounds();
  this->Widget->renderWindow()->Render();
}

bool pqSlabcastStreamChart::savePng(const QString& path)
{
  const QImage image = this->Widget->grabFramebuffer();
  return !image.isNull() && image.save(path, "PNG");
}
