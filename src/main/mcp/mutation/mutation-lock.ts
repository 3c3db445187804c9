/**
 * The process-wide in-process mutation lock (docs/mcp-tools.md#mutation-pipeline step 8): one for all workdirs, so
 * two mutations of this process never race for a writer lease and report WORKDIR_BUSY to each
 * other; callers wait their turn in arrival order.
 */

export type Release = () => void;

export class MutationLock {
  private tail: Promise<void> = Promise.resolve();

  /** Resolves once every earlier holder has released; the caller must release exactly once. */
  acquire(): Promise<Release> {
    let release!: Release;
    const turn = new Promise<void>((resolve) => {
      release = resolve;
    });
    const ready = this.tail.then(() => release);
    this.tail = this.tail.then(() => turn);
    return ready;
  }
}

export const mutationLock = new MutationLock();
