/** Error raised when one named step of a build or of the local stack fails; `step` names it. */
export class StepError extends Error {
  readonly step: string;
  constructor(step: string, message: string, options?: { cause?: unknown }) {
    super(`${step}: ${message}`, options);
    this.step = step;
  }
}
