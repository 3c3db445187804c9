/**
 * The audit log (docs/mcp-tools.md#audit-log): one JSON object per line on stderr, metadata only. Callers
 * pass counts, codes and normalized relative paths; nothing here ever sees contents or secrets.
 */
export type Level = "DEBUG" | "INFO" | "WARN" | "ERROR";
export type LogLevelSetting = "debug" | "info" | "warn" | "error";

const RANK: Record<Level, number> = { DEBUG: 10, INFO: 20, WARN: 30, ERROR: 40 };

export type AuditFields = Record<string, string | number | boolean | null | undefined>;

export interface AuditSink {
  write(line: string): void;
}

export const stderrSink: AuditSink = { write: (line) => process.stderr.write(line) };

/** Sees every line emitted, whatever the threshold (the Bridge's metrics count from them). */
export type AuditObserver = (level: Level, event: string, fields: AuditFields) => void;

export class AuditLog {
  private readonly threshold: number;
  private readonly observers: AuditObserver[] = [];

  constructor(
    level: LogLevelSetting = "info",
    private readonly sink: AuditSink = stderrSink,
  ) {
    this.threshold = RANK[level.toUpperCase() as Level];
  }

  observe(observer: AuditObserver): void {
    this.observers.push(observer);
  }

  emit(level: Level, event: string, fields: AuditFields = {}): void {
    for (const observe of this.observers) observe(level, event, fields);
    if (RANK[level] < this.threshold) return;
    const record: AuditFields = { timestamp: new Date().toISOString(), level, event };
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) record[k] = v;
    this.sink.write(`${JSON.stringify(record)}\n`);
  }

  info(event: string, fields?: AuditFields): void {
    this.emit("INFO", event, fields);
  }
  warn(event: string, fields?: AuditFields): void {
    this.emit("WARN", event, fields);
  }
  error(event: string, fields?: AuditFields): void {
    this.emit("ERROR", event, fields);
  }
  debug(event: string, fields?: AuditFields): void {
    this.emit("DEBUG", event, fields);
  }
}
