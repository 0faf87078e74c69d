package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/text"
)

// redrawEvery is how often a terminal's progress view is redrawn while
// nothing happens, for the elapsed time and the ETA.
const redrawEvery = 250 * time.Millisecond

// follower shows a run's progress while it runs in this process: on a
// terminal, a view redrawn in place (each task's state, a progress bar
// with percentage and ETA, the cost so far); otherwise one line per task
// as it finishes, which scripts and logs can read.
type follower struct {
	m     *Main
	h     hearth.RunReader
	ctx   context.Context
	id    string
	w     io.Writer
	tty   bool
	quiet bool
	start time.Time
	// done counts the tasks that finished while we watched: the ETA's
	// rate.
	done int
	// finished holds the run's tasks that are succeeded, failed or
	// skipped, from the run's records when we started and its events
	// since: the plain lines' [n/total]. A task sent back or revisited
	// leaves it.
	finished  map[string]bool
	decisions map[string]hearth.Decision
	started   map[string]time.Time
	// Plain lines come in the order tasks started (and so were placed:
	// a task is placed as it starts), not the order they finished in: a
	// line that says "the pool is full" must come after the spawns that
	// filled it, slow as a spawn is. placed numbers each task's latest
	// start; held are finished tasks' events waiting for the tasks
	// started before them; printed counts the lines' [n/total].
	placed      map[string]int
	placements  int
	held        []hearth.Event
	printed     int
	printedOnce map[string]bool
	drawn       int // lines of the last frame
	width       int
}

// follow shows the run's progress until it stops and returns how it
// stopped.
func (m *Main) follow(ctx context.Context, h hearth.RunReader, run hearth.RunWatch, quiet, asJSON bool) (hearth.RunInfo, error) {
	defer run.Close()
	f := &follower{
		m: m, h: h, ctx: ctx, id: run.ID(), w: m.Stdout, quiet: quiet, start: time.Now(),
		decisions:   make(map[string]hearth.Decision),
		started:     make(map[string]time.Time),
		finished:    make(map[string]bool),
		placed:      make(map[string]int),
		printedOnce: make(map[string]bool),
	}
	if d, err := h.Run(ctx, run.ID()); err == nil {
		for _, t := range d.TaskList {
			if finalTask(t.Status) {
				f.finished[t.Name] = true
				f.printedOnce[t.Name] = true
			}
		}
		f.printed = len(f.finished)
	}
	if asJSON {
		f.w = io.Discard
	} else if m.isTerminal(m.Stdout) {
		f.tty = true
		f.width = m.termWidth(m.Stdout)
	}
	tick := time.NewTicker(redrawEvery)
	defer tick.Stop()
	if f.tty {
		f.redraw()
	}
	for {
		select {
		case e, ok := <-run.Events():
			if !ok {
				<-run.Done()
				f.release(true)
				return run.Wait(ctx)
			}
			f.event(e)
			if f.tty {
				f.redraw()
			}
		case <-tick.C:
			if f.tty {
				f.redraw()
			}
		case <-run.Done():
			// Events published before the run stopped are in the buffer.
			for {
				select {
				case e, ok := <-run.Events():
					if ok {
						f.event(e)
						continue
					}
				default:
				}
				break
			}
			f.release(true)
			if f.tty {
				f.redraw()
			}
			return run.Wait(ctx)
		}
	}
}

// event takes one event of the run.
func (f *follower) event(e hearth.Event) {
	switch e.Kind {
	case hearth.EventDecision:
		if e.Decision != nil {
			f.decisions[taskName(e.Task)] = *e.Decision
		}
		return
	case hearth.EventRunTask:
		to := hearth.TaskStatus(e.To)
		switch to {
		case hearth.TaskRunning:
			f.started[e.Task] = e.Time
			f.placements++
			f.placed[e.Task] = f.placements
		case hearth.TaskSucceeded, hearth.TaskFailed:
			f.done++
		}
		if finalTask(to) {
			f.finished[e.Task] = true
		} else {
			delete(f.finished, e.Task)
		}
	}
	if f.tty {
		return
	}
	if e.Kind == hearth.EventRunTask && finalTask(hearth.TaskStatus(e.To)) {
		f.held = append(f.held, e)
		f.release(false)
		return
	}
	f.line(e)
}

// release prints the held lines of finished tasks, in the order the tasks
// started, as far as no task started before them is still running; with
// all, every one (the run stopped).
func (f *follower) release(all bool) {
	for len(f.held) > 0 {
		// The earliest started of the held tasks (ones that never
		// started, skipped, come first).
		next := 0
		for i, e := range f.held {
			if f.placed[e.Task] < f.placed[f.held[next].Task] {
				next = i
			}
		}
		e := f.held[next]
		if !all {
			for t, n := range f.placed {
				if n < f.placed[e.Task] && !f.finished[t] {
					return // started before it, and still running
				}
			}
		}
		f.held = append(f.held[:next], f.held[next+1:]...)
		f.line(e)
	}
}

// taskName is the pipeline task's name in a run task's host ID,
// "<run>/<task>/<round>/<attempt>".
func taskName(id string) string {
	parts := strings.Split(id, "/")
	if len(parts) >= 4 {
		return parts[len(parts)-3]
	}
	return id
}

// line prints an event as a line of plain output.
func (f *follower) line(e hearth.Event) {
	w := f.w
	switch e.Kind {
	case hearth.EventRunTask:
		if e.To == "" {
			// A note on a task whose status stays: it waits for its
			// stage to open (said once per wait).
			fmt.Fprintf(w, "        %s\n", e.Message)
			return
		}
		total := f.total()
		if finalTask(hearth.TaskStatus(e.To)) && !f.printedOnce[e.Task] {
			f.printedOnce[e.Task] = true
			f.printed++
		}
		prefix := func() string {
			return fmt.Sprintf("[%*d/%d] %-28s", len(fmt.Sprint(total)), f.printed, total, e.Task)
		}
		switch hearth.TaskStatus(e.To) {
		case hearth.TaskSucceeded:
			d, ok := f.decisions[e.Task]
			if !ok {
				fmt.Fprintf(w, "%s succeeded%s\n", prefix(), costNote(e.Cost))
				return
			}
			took := "-"
			if t0, ok := f.started[e.Task]; ok {
				took = roundDur(e.Time.Sub(t0))
			}
			fmt.Fprintf(w, "%s %-10s %-18s %6s  %s%s\n", prefix(), d.Action, d.Session, took, reasonTail(d), costNote(e.Cost))
			if f.quiet {
				return
			}
			for i, c := range d.Candidates {
				if i == 2 {
					break
				}
				fmt.Fprintf(w, "        %s\n", explain(c, d.Threshold))
			}
		case hearth.TaskFailed:
			fmt.Fprintf(w, "%s FAILED: %s\n", prefix(), text.FirstLine(e.Err))
		case hearth.TaskRetrying:
			fmt.Fprintf(w, "        %s: %s: %s\n", e.Task, afterColon(e.Message), text.FirstLine(e.Err))
		case hearth.TaskSkipped:
			fmt.Fprintf(w, "%s skipped: %s\n", prefix(), afterColon(e.Message))
		case hearth.TaskPending:
			if e.From == string(hearth.TaskSucceeded) {
				fmt.Fprintf(w, "        %s: %s\n", e.Task, afterColon(e.Message))
			}
		}
	case hearth.EventRunGate:
		fmt.Fprintf(w, "        %s\n", e.Message)
	case hearth.EventWriteFailed:
		fmt.Fprintf(w, "        ! %s\n", e.Message)
	case hearth.EventRunStage:
		fmt.Fprintf(w, "        stage %s -> %s\n", e.From, e.To)
	}
}

func costNote(c float64) string {
	if c == 0 {
		return ""
	}
	return fmt.Sprintf("  cost %.2f", c)
}

// afterColon is an event message without its "name: " prefix.
func afterColon(msg string) string {
	if _, rest, ok := strings.Cut(msg, ": "); ok {
		return rest
	}
	return msg
}

// finalTask reports whether a task in status s is done with, for now.
func finalTask(s hearth.TaskStatus) bool {
	return s == hearth.TaskSucceeded || s == hearth.TaskFailed || s == hearth.TaskSkipped
}

func (f *follower) total() int {
	if d, err := f.h.Run(f.ctx, f.id); err == nil {
		return d.Tasks
	}
	return 0
}

// redraw draws the terminal view in place of the last one.
func (f *follower) redraw() {
	d, err := f.h.Run(f.ctx, f.id)
	if err != nil {
		return
	}
	lines := frame(d, f.decisions, f.done, time.Since(f.start), f.width)
	// The frame's own escape sequences go to the terminal as they are;
	// what its lines hold (task names, agents' messages) goes through
	// text.Safe.
	w := f.w
	if sw, ok := w.(*text.SafeWriter); ok {
		w = sw.Underlying()
	}
	var b strings.Builder
	if f.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", f.drawn)
	}
	for _, l := range lines {
		b.WriteString("\x1b[2K")
		b.WriteString(text.Safe(l))
		b.WriteByte('\n')
	}
	// A shorter frame clears what is left of the longer one.
	for i := len(lines); i < f.drawn; i++ {
		b.WriteString("\x1b[2K\n")
	}
	if extra := f.drawn - len(lines); extra > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", extra)
	}
	f.drawn = len(lines)
	_, _ = io.WriteString(w, b.String())
}

// maxTaskLines bounds the tasks a frame lists; the rest are counted.
const maxTaskLines = 14

// frame renders the terminal view of a run: a header, a progress bar with
// percentage, ETA and cost, and one line per task (the running first,
// then the latest finished, then the next pending, within maxTaskLines).
// done is the tasks finished since the view started, over elapsed: the
// rate the ETA assumes.
func frame(d hearth.RunDetail, decisions map[string]hearth.Decision, done int, elapsed time.Duration, width int) []string {
	var out []string
	head := fmt.Sprintf("run %s · %s · %s", d.ID, d.Pipeline, d.Status)
	if d.Stage != "" {
		head += " · stage " + d.Stage
	}
	out = append(out, head)
	pct := 0.0
	if d.Tasks > 0 {
		pct = float64(d.Succeeded) / float64(d.Tasks)
	}
	const barWidth = 24
	filled := int(pct * barWidth)
	bar := "[" + strings.Repeat("█", filled) + strings.Repeat("░", barWidth-filled) + "]"
	eta := "ETA —"
	if left := d.Tasks - d.Succeeded; done > 0 && left > 0 {
		eta = "ETA " + roundDur(elapsed/time.Duration(done)*time.Duration(left))
	} else if left == 0 {
		eta = "done"
	}
	progress := fmt.Sprintf("%s %3.0f%%  %d/%d tasks · %s · %s", bar, pct*100, d.Succeeded, d.Tasks, roundDur(elapsed), eta)
	if d.Cost > 0 || d.Budget > 0 {
		progress += fmt.Sprintf(" · cost %.2f", d.Cost)
		if d.Budget > 0 {
			progress += fmt.Sprintf(" of %.2f", d.Budget)
		}
	}
	out = append(out, progress)
	nameWidth := 8
	for _, t := range d.TaskList {
		nameWidth = min(max(nameWidth, len(t.Name)), 32)
	}

	var running, finished, pending []hearth.RunTaskInfo
	for _, t := range d.TaskList {
		switch t.Status {
		case hearth.TaskRunning, hearth.TaskRetrying:
			running = append(running, t)
		case hearth.TaskPending:
			pending = append(pending, t)
		default:
			finished = append(finished, t)
		}
	}
	show := running
	room := maxTaskLines - len(show)
	// The latest finished, in the order they finished.
	latest := finished
	if len(latest) > room/2+room%2 && len(pending) > 0 {
		latest = latest[len(latest)-(room/2+room%2):]
	} else if len(latest) > room {
		latest = latest[len(latest)-room:]
	}
	show = append(show, latest...)
	room = maxTaskLines - len(show)
	if room > 0 && len(pending) > 0 {
		show = append(show, pending[:min(room, len(pending))]...)
	}
	if len(show) > maxTaskLines {
		show = show[:maxTaskLines]
	}
	for _, t := range orderByGraph(d.TaskList, show) {
		out = append(out, clip(taskLine(t, decisions[t.Name], nameWidth), width))
	}
	if hidden := len(d.TaskList) - len(show); hidden > 0 {
		out = append(out, fmt.Sprintf("  … %d more", hidden))
	}
	if d.Reason != "" && d.Status != hearth.RunRunning {
		out = append(out, clip("  "+text.FirstLine(d.Reason), width))
	}
	return out
}

// orderByGraph keeps the tasks of show in the run's task order.
func orderByGraph(all, show []hearth.RunTaskInfo) []hearth.RunTaskInfo {
	in := make(map[string]bool, len(show))
	for _, t := range show {
		in[t.Name] = true
	}
	var out []hearth.RunTaskInfo
	for _, t := range all {
		if in[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

var statusMarks = map[hearth.TaskStatus]string{
	hearth.TaskPending:   "·",
	hearth.TaskRunning:   "▶",
	hearth.TaskSucceeded: "✓",
	hearth.TaskFailed:    "✗",
	hearth.TaskRetrying:  "↻",
	hearth.TaskSkipped:   "–",
}

func taskLine(t hearth.RunTaskInfo, d hearth.Decision, nameWidth int) string {
	s := fmt.Sprintf("  %s %-*s %-9s", statusMarks[t.Status], nameWidth, t.Name, t.Status)
	switch t.Status {
	case hearth.TaskRunning:
		s += fmt.Sprintf(" attempt %d", t.Attempt)
		if d.Action != "" {
			s += fmt.Sprintf(" · %s %s", d.Action, d.Session)
		}
	case hearth.TaskRetrying:
		s += fmt.Sprintf(" attempt %d failed; next %s", t.Attempt, t.RetryAt.Format("15:04:05"))
	case hearth.TaskSucceeded:
		s += fmt.Sprintf(" v%d %6s", t.Version, roundDur(t.Finished.Sub(t.Started)))
		if t.Cost > 0 {
			s += fmt.Sprintf(" · %.2f", t.Cost)
		}
		if t.Session != "" {
			s += " · " + t.Session
		}
		if t.NeedsReview {
			s += " · needs review"
		}
	case hearth.TaskFailed:
		s += " " + text.FirstLine(t.Error)
	case hearth.TaskPending:
		if t.Reason != "" {
			s += " " + t.Reason
		}
	}
	return s
}

func roundDur(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// clip cuts a line to width runes; 0 means no limit.
func clip(s string, width int) string {
	if width <= 0 {
		return s
	}
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	return string(r[:width-1]) + "…"
}
