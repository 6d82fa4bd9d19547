#include "pqSlabcastTestProbe.h"

#include "pqActiveObjects.h"
#include "pqView.h"

#include <QAbstractButton>
#include <QApplication>
#include <QDateTime>
#include <QDockWidget>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMenu>
#include <QMetaObject>
#include <QTableWidget>
#include <QTextStream>
#include <QElapsedTimer>
#include <QTimer>

#include <algorithm>
#include <vector>

namespace
{
// By class name: ParaView names a plugin's dock window after its class when
// it adds it to the main window.
QDockWidget* Monitor()
{
  for (QWidget* top : QApplication::topLevelWidgets())
  {
    for (QDockWidget* dock : top->findChildren<QDockWidget*>())
    {
      if (dock->inherits("pqSlabcastStreamMonitor"))
      {
        return dock;
      }
    }
    if (top->inherits("pqSlabcastStreamMonitor"))
    {
      return qobject_cast<QDockWidget*>(top);
    }
  }
  return nullptr;
}
} // namespace

pqSlabcastTestProbe::pqSlabcastTestProbe(QObject* parent)
  : QObject(parent)
{
}

pqSlabcastTestProbe::~pqSlabcastTestProbe() = default;

void pqSlabcastTestProbe::onStartup()
{
  this->Out = qEnvironmentVariable("SLABCAST_PROBE_OUT");
  this->Commands = qEnvironmentVariable("SLABCAST_PROBE_COMMANDS");
  if (this->Out.isEmpty())
  {
    return;
  }
  this->Timer = new QTimer(this);
  QObject::connect(this->Timer, &QTimer::timeout, this, &pqSlabcastTestProbe::tick);
  this->Timer->start(250);
}

void pqSlabcastTestProbe::onShutdown()
{
  if (this->Timer)
  {
    this->Timer->stop();
  }
}

void pqSlabcastTestProbe::tick()
{
  this->runCommands();
  this->writeState();
}

// One command per line: "save_chart PATH", "save_series PATH", "click OBJECTNAME",
// "show", "hide", "float" (the panel), "render_bench SECONDS".
// Each result is appended to OUT.results as "COMMAND -> ok|failed".
void pqSlabcastTestProbe::runCommands()
{
  QFile file(this->Commands);
  if (this->Commands.isEmpty() || !file.open(QIODevice::ReadOnly))
  {
    return;
  }
  const QStringList lines = QString::fromUtf8(file.readAll()).split('\n', Qt::SkipEmptyParts);
  file.close();
  file.remove();
  QFile results(this->Out + ".results");
  results.open(QIODevice::Append);
  QTextStream log(&results);
  QDockWidget* monitor = Monitor();
  for (const QString& line : lines)
  {
    const QString verb = line.section(' ', 0, 0);
    const QString arg = line.section(' ', 1);
    bool ok = false;
    if (monitor && (verb == "save_chart" || verb == "save_series"))
    {
      QMetaObject::invokeMethod(monitor, verb == "save_chart" ? "saveChart" : "saveSeries",
        Qt::DirectConnection, Q_RETURN_ARG(bool, ok), Q_ARG(QString, arg));
    }
    else if (monitor && (verb == "hide" || verb == "show"))
    {
      monitor->setVisible(verb == "show");
      ok = true;
    }
    else if (monitor && verb == "float")
    {
      // Shown, but out of the main window: showing or hiding it then leaves
      // the render view's size alone (a benchmark compares like with like).
      monitor->setFloating(true);
      monitor->show();
      monitor->setGeometry(900, 600, 370, 400);
      ok = true;
    }
    else if (verb == "render_bench")
    {
      // Renders the active view back to back for `arg` seconds, letting every
      // other event (the panel's timer) run between frames; one line of
      // figures goes to the results.
      pqView* view = pqActiveObjects::instance().activeView();
      if (view)
      {
        const double seconds = arg.toDouble();
        const double busyBefore = monitor ? monitor->property("busyMs").toDouble() : 0;
        const int updatesBefore = monitor ? monitor->property("updates").toInt() : 0;
        QElapsedTimer clock;
        clock.start();
        std::vector<double> frames;
        while (clock.elapsed() < seconds * 1000)
        {
          QElapsedTimer frame;
          frame.start();
          view->forceRender();
          frames.push_back(frame.nsecsElapsed() / 1e6);
          QApplication::processEvents();
        }
        const double elapsed = clock.elapsed() / 1000.0;
        std::sort(frames.begin(), frames.end());
        double sum = 0;
        for (double f : frames)
        {
          sum += f;
        }
        log << "render_bench frames " << frames.size() << " seconds " << elapsed << " fps "
            << frames.size() / elapsed << " mean_ms " << sum / frames.size() << " median_ms "
            << frames[frames.size() / 2] << " panel_updates "
            << (monitor ? monitor->property("updates").toInt() - updatesBefore : 0) << " panel_busy_ms "
            << (monitor ? monitor->property("busyMs").toDouble() - busyBefore : 0) << " panel_visible "
            << (monitor && monitor->isVisible() ? 1 : 0) << "\n";
        ok = true;
      }
    }
    else if (monitor && verb == "click")
    {
      if (auto* button = monitor->findChild<QAbstractButton*>(arg))
      {
        button->click();
        ok = true;
      }
    }
    log << line << " -> " << (ok ? "ok" : "failed") << "\n";
  }
}

void pqSlabcastTestProbe::writeState()
{
  QJsonObject state;
  state["time"] = QDateTime::currentMSecsSinceEpoch() / 1000.0;
  QDockWidget* monitor = Monitor();
  state["found"] = monitor != nullptr;
  // What the main window's View menu offers (the panel must be there).
  QJsonArray viewMenu;
  for (QWidget* top : QApplication::topLevelWidgets())
  {
    for (QMenu* menu : top->findChildren<QMenu*>())
    {
      if (menu->title().remove('&') == "View")
      {
        // As when a user opens it: ParaView fills its panel list then.
        QMetaObject::invokeMethod(menu, "aboutToShow", Qt::DirectConnection);
        for (QAction* action : menu->actions())
        {
          viewMenu.append(action->text().remove('&'));
        }
      }
    }
  }
  state["viewMenu"] = viewMenu;
  if (monitor)
  {
    state["visible"] = monitor->isVisible();
    state["title"] = monitor->windowTitle();
    state["updates"] = monitor->property("updates").toInt();
    state["chartPoints"] = monitor->property("chartPoints").toInt();
    state["source"] = monitor->property("sourceName").toString();
    if (auto* status = monitor->findChild<QLabel*>("slabcastStreamStatus"))
    {
      state["status"] = status->text();
    }
    if (auto* pause = monitor->findChild<QAbstractButton*>("slabcastPause"))
    {
      state["paused"] = pause->isChecked();
    }
    if (auto* table = monitor->findChild<QTableWidget*>("slabcastStreamTable"))
    {
      QJsonArray header, rows;
      for (int c = 0; c < table->columnCount(); ++c)
      {
        header.append(table->horizontalHeaderItem(c) ? table->horizontalHeaderItem(c)->text() : "");
      }
      for (int r = 0; r < table->rowCount(); ++r)
      {
        QJsonArray row;
        for (int c = 0; c < table->columnCount(); ++c)
        {
          row.append(table->item(r, c) ? table->item(r, c)->text() : "");
        }
        rows.append(row);
      }
      state["columns"] = header;
      state["rows"] = rows;
    }
  }
  QFile tmp(this->Out + ".tmp");
  if (tmp.open(QIODevice::WriteOnly | QIODevice::Truncate))
  {
    tmp.write(QJsonDocument(state).toJson(QJsonDocument::Compact));
    tmp.close();
    QFile::remove(this->Out);
    tmp.rename(this->Out);
  }
}
