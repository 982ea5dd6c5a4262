// memhog: the demo workload. It allocates memory at a steady rate up to a target and then holds
// it, as the original memhog-operator demo's memhog did, so that its container's working set
// crosses a threshold of its memory limit; in the growing mode it never stops, so that the
// kernel's OOM killer ends it at its limit.
//
// Environment (sizes are Kubernetes quantities: 320Mi, 1Gi, 500M, or bytes):
//
//	MEMHOG_TARGET  bytes to hold (default 320Mi: 83% of the demo's 384Mi limit, 42% of the 768Mi
//	               it is scaled to, so it crosses a 75% threshold once and not after the scale)
//	MEMHOG_RATE    bytes per second (default 32Mi)
//	MEMHOG_MODE    "hold" (default), "grow" (keep allocating past the target, for OOM tests),
//	               "grow-child" (start a second memhog process in "grow" mode, say how it ended,
//	               then wait for SIGTERM: the kernel kills the child and the container lives on,
//	               so a per-container OOM counter has a container to be counted on), or
//	               "sawtooth" (hold MEMHOG_LOW at once, allocate up to the target, release down
//	               to MEMHOG_LOW and return it to the kernel, allocate again, and so on: a
//	               garbage collector's pattern)
//	               "step" (hold MEMHOG_TARGET, then, MEMHOG_STEP_AFTER after the start, grow to
//	               and hold MEMHOG_STEP_TARGET: a load that changes level), or "cache" (write a
//	               file of MEMHOG_TARGET bytes at MEMHOG_FILE, then read it over and over at
//	               MEMHOG_RATE: a reader whose working set is the kernel's page cache, its own
//	               memory a 1 MiB buffer)
//	MEMHOG_LOW     bytes kept at each release of the sawtooth (default 0); below the target
//	MEMHOG_STEP_TARGET, MEMHOG_STEP_AFTER  the step's second level (a quantity) and when it
//	               starts (a Go duration: 90s, 2m)
//	MEMHOG_FILE    the cache mode's file (default /cache/memhog.data: an emptyDir, as the image has
//	               no writable directory)
//	PORT           when set (as Knative Serving sets it), a TCP port it accepts connections on and
//	               answers each with an empty HTTP 200, so that a Knative Revision's queue-proxy
//	               finds it up; unset, it listens on nothing
//
// Every page is written, so the memory is resident and counted in the cgroup's working set.
// It logs one line per step on stdout (first the Go runtime's memory limit, when GOMEMLIMIT sets
// one) and exits 0 on SIGTERM.
package main

import (
	"fmt"
	"math"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime/debug"
	"syscall"
	"time"
)

const page = 4096

var suffixes = map[string]int64{
	"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
}

var quantityRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$`)

// parseQuantity reads a Kubernetes quantity with a binary or decimal suffix into whole bytes.
func parseQuantity(name, s string) (int64, error) {
	m := quantityRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%s=%q: not a quantity such as 320Mi, 1Gi or 500M", name, s)
	}
	n, ok := new(big.Rat).SetString(m[1])
	if !ok {
		return 0, fmt.Errorf("%s=%q: not a number", name, s)
	}
	n.Mul(n, new(big.Rat).SetInt64(suffixes[m[2]]))
	v := new(big.Int).Quo(n.Num(), n.Denom())
	if !v.IsInt64() || v.Int64() <= 0 {
		return 0, fmt.Errorf("%s=%q: must be a positive size", name, s)
	}
	return v.Int64(), nil
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// answer accepts connections on port and answers each with an empty HTTP 200: what a Knative
// Revision's queue-proxy probes and forwards to. Raw TCP, not net/http, so memhog's own memory
// stays what it was.
func answer(port string) error {
	listener, err := net.Listen("tcp", ":"+port)
	if err != nil {
		return fmt.Errorf("PORT=%q: %w", port, err)
	}
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 4096)
				_, _ = conn.Read(buf)
				_, _ = conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			}()
		}
	}()
	return nil
}

func main() {
	if port := env("PORT", ""); port != "" {
		if err := answer(port); err != nil {
			fmt.Fprintln(os.Stderr, "memhog:", err)
			os.Exit(2)
		}
	}
	// The Go runtime's memory limit, when GOMEMLIMIT sets one: the heap limit a test reads back.
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		fmt.Printf("memhog: heap limit %.1f MiB (GOMEMLIMIT)\n", float64(limit)/(1<<20))
	}
	target, err := parseQuantity("MEMHOG_TARGET", env("MEMHOG_TARGET", "320Mi"))
	if err == nil {
		var rate int64
		rate, err = parseQuantity("MEMHOG_RATE", env("MEMHOG_RATE", "32Mi"))
		if err == nil {
			mode := env("MEMHOG_MODE", "hold")
			switch mode {
			case "hold", "grow":
				run(target, rate, mode == "grow", target, 0)
				return
			case "step":
				var later int64
				var after time.Duration
				later, err = parseQuantity("MEMHOG_STEP_TARGET", env("MEMHOG_STEP_TARGET", ""))
				if err == nil {
					after, err = time.ParseDuration(env("MEMHOG_STEP_AFTER", "60s"))
				}
				if err == nil {
					run(target, rate, false, later, after)
					return
				}
			case "cache":
				err = readCache(env("MEMHOG_FILE", "/cache/memhog.data"), target, rate)
				if err == nil {
					return
				}
			case "sawtooth":
				var low int64
				if v := env("MEMHOG_LOW", ""); v != "" {
					low, err = parseQuantity("MEMHOG_LOW", v)
				}
				if err == nil && low >= target {
					err = fmt.Errorf("MEMHOG_LOW=%d: must be below MEMHOG_TARGET=%d", low, target)
				}
				if err == nil {
					sawtooth(target, low, rate)
					return
				}
			case "grow-child":
				err = growChild()
				if err == nil {
					return
				}
			default:
				err = fmt.Errorf("MEMHOG_MODE=%q: must be hold, grow, grow-child, sawtooth, step or cache", mode)
			}
		}
	}
	fmt.Fprintln(os.Stderr, "memhog:", err)
	os.Exit(2)
}

// pacing is what run and sawtooth share: SIGTERM and SIGINT on stop, a tick every 100 ms, and the
// bytes to allocate at each tick for rate bytes a second (a page at least).
func pacing(rate int64) (stop chan os.Signal, ticker *time.Ticker, step int64) {
	stop = make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	const tick = 100 * time.Millisecond
	return stop, time.NewTicker(tick), max(rate/int64(time.Second/tick), page)
}

// resident allocates n bytes and writes every page, so that they are resident and counted in the
// cgroup's working set.
func resident(n int64) []byte {
	chunk := make([]byte, n)
	for i := int64(0); i < n; i += page {
		chunk[i] = 1
	}
	return chunk
}

// run allocates at rate up to target and holds it (grow: keeps allocating past it); with after
// set, the target becomes later once after has passed since the start.
func run(target, rate int64, grow bool, later int64, after time.Duration) {
	stop, ticker, step := pacing(rate)
	var held [][]byte
	var total int64
	fmt.Printf("memhog: target %d bytes at %d bytes/s, mode %s\n", target, rate, map[bool]string{true: "grow", false: "hold"}[grow])
	defer ticker.Stop()
	start, reported := time.Now(), time.Now()
	for {
		select {
		case <-stop:
			fmt.Printf("memhog: holding %d bytes; stopping\n", total)
			return
		case <-ticker.C:
		}
		if after > 0 && target != later && time.Since(start) >= after {
			target = later
			fmt.Printf("memhog: target %d bytes from now\n", target)
		}
		if total >= target && !grow {
			continue
		}
		n := step
		if !grow && total+n > target {
			n = target - total
		}
		held = append(held, resident(n))
		total += n
		if total >= target && !grow || time.Since(reported) >= time.Second {
			fmt.Printf("memhog: holding %d bytes\n", total)
			reported = time.Now()
		}
	}
}

// sawtooth holds low at once (a heap's live set, there from the start), allocates at rate up to
// target, then drops what it holds above low and returns it to the kernel (a collection and a
// scavenge: the pages leave the cgroup's working set), and starts again; it logs each step as run
// does, and each release.
func sawtooth(target, low, rate int64) {
	stop, ticker, step := pacing(rate)
	var held [][]byte
	var total int64
	if low > 0 {
		held, total = append(held, resident(low)), low
	}
	fmt.Printf("memhog: sawtooth from %d to %d bytes at %d bytes/s\n", low, target, rate)
	defer ticker.Stop()
	reported := time.Now()
	for {
		select {
		case <-stop:
			fmt.Printf("memhog: holding %d bytes; stopping\n", total)
			return
		case <-ticker.C:
		}
		if total >= target {
			for total > low && len(held) > 0 {
				last := len(held) - 1
				total -= int64(len(held[last]))
				// Cleared, not only cut off: the slice's array would keep the chunk reachable.
				held[last] = nil
				held = held[:last]
			}
			debug.FreeOSMemory()
			fmt.Printf("memhog: released to %d bytes\n", total)
			reported = time.Now()
			continue
		}
		n := min(step, target-total)
		held = append(held, resident(n))
		total += n
		if time.Since(reported) >= time.Second {
			fmt.Printf("memhog: holding %d bytes\n", total)
			reported = time.Now()
		}
	}
}

// growChild runs this program again as a child in "grow" mode, reports how the child ended (the
// kernel's OOM killer: "signal: killed"), and waits for SIGTERM.
func growChild() error {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	child := exec.Command("/proc/self/exe")
	child.Env = append(os.Environ(), "MEMHOG_MODE=grow")
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	if err := child.Start(); err != nil {
		return fmt.Errorf("start the growing child: %w", err)
	}
	fmt.Printf("memhog: child %d growing\n", child.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	select {
	case err := <-done:
		fmt.Printf("memhog: child ended: %v\n", err)
	case <-stop:
		_ = child.Process.Kill()
		return nil
	}
	<-stop
	return nil
}

// readCache writes size bytes to file (its pages land in the page cache, charged to the
// container's cgroup), then reads the file from the start again and again at rate bytes a second
// through a 1 MiB buffer, so that the file's pages stay recently used; the kernel reclaims them
// under the cgroup's limit instead of killing anything. Stops on SIGTERM or SIGINT.
func readCache(file string, size, rate int64) error {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("MEMHOG_FILE=%q: %w", file, err)
	}
	defer f.Close()
	for written := int64(0); written < size; {
		n := min(int64(len(buf)), size-written)
		if _, err := f.Write(buf[:n]); err != nil {
			return fmt.Errorf("write %s: %w", file, err)
		}
		written += n
	}
	fmt.Printf("memhog: wrote %d bytes to %s; reading it at %d bytes/s\n", size, file, rate)
	stop, ticker, step := pacing(rate)
	defer ticker.Stop()
	var offset, passes int64
	for {
		select {
		case <-stop:
			fmt.Printf("memhog: read %s %d times; stopping\n", file, passes)
			return nil
		case <-ticker.C:
		}
		for left := step; left > 0; {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), left)], offset)
			offset += int64(n)
			left -= int64(n)
			if err != nil || offset >= size {
				offset = 0
				passes++
			}
		}
	}
}
