// Test-only: see testing/plugin/probe/CMakeLists.txt.
#pragma once

#include <QObject>

class QTimer;

class pqSlabcastTestProbe : public QObject
{
  Q_OBJECT
public:
  explicit pqSlabcastTestProbe(QObject* parent = nullptr);
  ~pqSlabcastTestProbe() override;
  void onStartup();
  void onShutdown();

private:
  void tick();
  void runCommands();
  void writeState();

  QTimer* Timer = nullptr;
  QString Out;
  QString Commands;
};
