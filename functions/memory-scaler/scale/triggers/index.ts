/** Every trigger of a scale, by the `trigger` its alert carries (`trigger.ts`). */
import type { AlertTrigger } from "../../../lib/alert-event.ts";
import { heapError } from "./heap-error.ts";
import { heapThreshold } from "./heap-threshold.ts";
import { oomKilled } from "./oom-killed.ts";
import { threshold } from "./threshold.ts";
import type { Trigger } from "./trigger.ts";
import { trend } from "./trend.ts";

export const TRIGGERS: Readonly<Record<AlertTrigger, Trigger>> = { threshold, oomKilled, trend, heapError, heapThreshold };
