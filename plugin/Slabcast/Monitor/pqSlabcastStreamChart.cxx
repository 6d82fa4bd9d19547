#include "pqSlabcastStreamChart.h"

#include "QVTKOpenGLNativeWidget.h"
#include "vtkAxis.h"
#include "vtkChartLegend.h"
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

#include <QImage>

#include <algorithm>
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
} // namespace

pqSlabcastStreamChart::pqSlabcastStreamChart(QWidget* parent)
  : QWidget(parent)
  , Widget(new QVTKOpenGLNativeWidget(this))
  , View(vtkContextView::New())
  , Chart(vtkChartXY::New())
  , Table(vtkTable::New())
{
  this->setObjectName("slabcastStreamChart");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(this->Widget);
  this->setMinimumHeight(180);

  vtkNew<vtkGenericOpenGLRenderWindow> window;
  this->Widget->setRenderWindow(window);
  this->View->SetRenderWindow(window);
  this->View->GetRenderer()->SetBackground(0.12, 0.12, 0.14);
  this->View->GetScene()->AddItem(this->Chart);
  this->Chart->SetShowLegend(true);
  this->Chart->GetLegend()->SetHorizontalAlignment(vtkChartLegend::LEFT);
  this->Chart->GetLegend()->SetVerticalAlignment(vtkChartLegend::TOP);
  this->Chart->GetAxis(vtkAxis::BOTTOM)->SetTitle("seconds (last minute)");
  this->Chart->GetAxis(vtkAxis::LEFT)->SetTitle("Gbit/s");
  this->Chart->GetAxis(vtkAxis::RIGHT)->SetTitle("loss % (last step)");
  for (int axis : { vtkAxis::BOTTOM, vtkAxis::LEFT, vtkAxis::RIGHT })
  {
    this->Chart->GetAxis(axis)->GetTitleProperties()->SetColor(0.9, 0.9, 0.9);
    this->Chart->GetAxis(axis)->GetLabelProperties()->SetColor(0.9, 0.9, 0.9);
  }
}

pqSlabcastStreamChart::~pqSlabcastStreamChart()
{
  this->Table->Delete();
  this->Chart->Delete();
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
    for (std::size_t c = 0; c < slabs.size(); ++c)
    {
      const auto it = s.slab_gbps.find(slabs[c]);
      perSlab[c]->SetValue(r, it != s.slab_gbps.end() ? it->second : 0.0);
    }
  }
  for (vtkDoubleArray* a : { t, total, loss })
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
      p->SetInputData(this->Table, 0, static_cast<vtkIdType>(3 + c));
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
  }
  // Both axes from 0: a rate or a loss read against a floating origin looks
  // larger than it is.
  double topRate = 0, topLoss = 0;
  for (const auto& s : samples)
  {
    topRate = std::max(topRate, s.total_gbps);
    topLoss = std::max(topLoss, s.loss_percent);
  }
  vtkAxis* left = this->Chart->GetAxis(vtkAxis::LEFT);
  left->SetBehavior(vtkAxis::FIXED);
  left->SetRange(0, topRate > 0 ? 1.15 * topRate : 1.0);
  vtkAxis* right = this->Chart->GetAxis(vtkAxis::RIGHT);
  right->SetBehavior(vtkAxis::FIXED);
  right->SetRange(0, std::max(1.0, 1.15 * topLoss));
  right->SetGridVisible(false); // one grid, the rate's
  this->Points = static_cast<int>(rows * static_cast<vtkIdType>(slabs.size() + 2));
  this->Chart->RecalculateBounds();
  this->Widget->renderWindow()->Render();
}

bool pqSlabcastStreamChart::savePng(const QString& path)
{
  const QImage image = this->Widget->grabFramebuffer();
  return !image.isNull() && image.save(path, "PNG");
}
