/**
 * The Streamable HTTP sessions of one server, bounded (docs/configuration.md, `[server]
 * http_max_sessions` and `http_session_idle_seconds`): a session no request has touched for the
 * idle time is closed, and a new session past the cap first closes the oldest idle one. A session
 * with a request in flight (an open SSE stream, a pending call) is never idle.
 */

export interface HttpSession<T> {
  readonly id: string;
  /** What serves the session (its SDK transport). */
  readonly transport: T;
  /** Requests of this session whose response is still open. */
  inFlight: number;
  lastActive: number;
  close(): Promise<void>;
}

/** The sweep runs a few times per idle period, between these bounds. */
const SWEEP_MIN_MS = 250;
const SWEEP_MAX_MS = 30_000;

export class HttpSessions<T> {
  private readonly sessions = new Map<string, HttpSession<T>>();
  /** Rooms made by `makeRoom` and not given back yet: initializations in flight count against the cap. */
  private pending = 0;
  private readonly sweeper: ReturnType<typeof setInterval>;

  constructor(
    private readonly max: number,
    private readonly idleMs: number,
    /** Told each time the server itself closes a session (never its id, which grants access). */
    private readonly onClosed: (reason: "idle" | "cap") => void,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(SWEEP_MAX_MS, Math.max(SWEEP_MIN_MS, idleMs / 4)));
    this.sweeper.unref();
  }

  get size(): number {
    return this.sessions.size;
  }

  get(id: string): HttpSession<T> | undefined {
    return this.sessions.get(id);
  }

  /** Registers a session that has just been initialized by a request still in flight. */
  add(id: string, transport: T, close: () => Promise<void>): HttpSession<T> {
    const session: HttpSession<T> = { id, transport, inFlight: 1, lastActive: performance.now(), close };
    this.sessions.set(id, session);
    return session;
  }

  begin(session: HttpSession<T>): void {
    session.inFlight++;
    session.lastActive = performance.now();
  }

  end(session: HttpSession<T>): void {
    session.inFlight--;
    session.lastActive = performance.now();
  }

  /** Forgets a session the client ended itself (DELETE). */
  forget(id: string): void {
    this.sessions.delete(id);
  }

  /**
   * Makes room for one more session: at the cap the oldest idle session is closed. The room is held
   * until the returned function is called (once the session is added, or its request ended without
   * one), so initializations running at once cannot pass the cap together. Null when every session
   * has a request in flight, so none can be closed.
   */
  makeRoom(): (() => void) | null {
    if (this.sessions.size + this.pending >= this.max) {
      let oldest: HttpSession<T> | null = null;
      for (const s of this.sessions.values()) {
        if (s.inFlight === 0 && (oldest === null || s.lastActive < oldest.lastActive)) oldest = s;
      }
      if (oldest === null) return null;
      this.closeSession(oldest);
      this.onClosed("cap");
    }
    this.pending++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.pending--;
    };
  }

  closeAll(): void {
    clearInterval(this.sweeper);
    for (const s of [...this.sessions.values()]) this.closeSession(s);
  }

  private sweep(): void {
    const cutoff = performance.now() - this.idleMs;
    for (const s of [...this.sessions.values()]) {
      if (s.inFlight === 0 && s.lastActive <= cutoff) {
        this.closeSession(s);
        this.onClosed("idle");
      }
    }
  }

  private closeSession(s: HttpSession<T>): void {
    this.sessions.delete(s.id);
    s.close().catch(() => {
      // the session's transport is gone either way
    });
  }
}
