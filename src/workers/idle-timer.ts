/**
 * The provider idle timeout (`event_idle_timeout_seconds`, docs/task-model.md#execution step 9): fires when the
 * provider has written nothing for the whole interval, never while a human request is open or the
 * provider reports a command in progress. A zero interval disables it.
 */
export class IdleTimer {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private paused = 0;
  private stopped = false;

  constructor(
    private readonly ms: number,
    private readonly onIdle: () => void,
  ) {}

  /** Output arrived: the interval starts again. */
  touch(): void {
    if (this.ms <= 0 || this.stopped || this.paused > 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.stopped = true;
      this.onIdle();
    }, this.ms);
  }

  /** A human request opened, or a command started: the provider may be silent until it is done. */
  pause(): void {
    this.paused++;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  resume(): void {
    this.paused = Math.max(0, this.paused - 1);
    this.touch();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
