package workshop

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

// The study planner skills follow the seed "Exam Study Planner - Session
// State Management": its canonical state document, section by section,
// with each skill reading and writing only what the seed's ownership
// table gives its agent:
//
//	study.collect   coordinator  writes status, user_inputs, file_registry
//	study.ingest    ingestion    reads user_inputs, file_registry; writes ingestion_state
//	study.estimate  estimation   reads ingestion_state; writes estimation_state
//	study.plan      planner      reads user_inputs, estimation_state; writes planning_state
//	study.review    planner      reads user_inputs, planning_state; writes planning_state
//	study.publish   coordinator  writes status, artifacts

type course struct {
	CourseID    string `json:"course_id"`
	CourseName  string `json:"course_name"`
	MidtermDate string `json:"midterm_date,omitempty"`
}

type userInputs struct {
	Timezone          string   `json:"timezone,omitempty"`
	StartDate         string   `json:"start_date,omitempty"`
	Courses           []course `json:"courses"`
	SharedConstraints struct {
		MaxMinutesPerDay int    `json:"max_minutes_per_day,omitempty"`
		PreferredRestDay string `json:"preferred_rest_day,omitempty"`
	} `json:"shared_constraints"`
}

type registeredFile struct {
	Filename     string   `json:"filename"`
	ContentType  string   `json:"content_type"`
	SizeBytes    int64    `json:"size_bytes"`
	StorageURI   string   `json:"storage_uri"`
	SHA256       string   `json:"sha256"`
	UploadStatus string   `json:"upload_status"`
	CourseIDs    []string `json:"course_ids"`
	IsShared     bool     `json:"is_shared"`
}

type ingestionState struct {
	Files    map[string]*fileIngestion `json:"files"`
	Evidence []*evidence               `json:"course_topic_evidence"`
}

type fileIngestion struct {
	Chunking struct {
		Mode             string `json:"mode"`
		MaxLinesPerChunk int    `json:"max_lines_per_chunk"`
		TotalChunks      int    `json:"total_chunks"`
	} `json:"chunking"`
	ProcessedChunks int    `json:"processed_chunks"`
	FailedChunks    []int  `json:"failed_chunks"`
	Status          string `json:"status"`
	Warning         string `json:"warning,omitempty"`
}

type evidence struct {
	CourseID        string   `json:"course_id"`
	Topic           string   `json:"topic"`
	EvidenceSummary string   `json:"evidence_summary"`
	SourceFiles     []string `json:"source_files"`
	SourceChunks    []string `json:"source_chunks"`
}

type topicEstimate struct {
	CourseID         string  `json:"course_id"`
	Topic            string  `json:"topic"`
	EstimatedMinutes int     `json:"estimated_minutes"`
	Priority         string  `json:"priority"`
	Confidence       float64 `json:"confidence"`
}

type estimationState struct {
	TopicEstimates   []topicEstimate `json:"topic_estimates"`
	UncertaintyFlags []string        `json:"uncertainty_flags"`
}

type planRow struct {
	Date             string   `json:"date"`
	Course           string   `json:"course"`
	Topic            string   `json:"topic"`
	TaskDescription  string   `json:"task_description"`
	EstimatedMinutes int      `json:"estimated_minutes"`
	Priority         string   `json:"priority"`
	SourceFiles      []string `json:"source_files,omitempty"`
	Status           string   `json:"status"`
}

type planningState struct {
	PlanVersion     int       `json:"plan_version"`
	StartDate       string    `json:"start_date"`
	LastMidtermDate string    `json:"last_midterm_date"`
	PlanRows        []planRow `json:"plan_rows"`
	Unplaced        []string  `json:"unplaced,omitempty"`
	Review          *review   `json:"review,omitempty"`
}

type review struct {
	ResultType       string          `json:"result_type"`
	RevisionReasons  []string        `json:"revision_reasons"`
	ValidationReport map[string]bool `json:"validation_report"`
}

func (w *work) userInputs() (userInputs, error) {
	var in userInputs
	ok, err := w.load("user_inputs", &in)
	if err != nil {
		return in, err
	}
	if !ok || len(in.Courses) == 0 {
		return in, sdk.Permanent(fmt.Errorf("workshop: %s: the run's state has no user_inputs with courses; start the run with --set 'user_inputs={\"courses\":[...]}'", w.cmd.Skill))
	}
	return in, nil
}

func shortID(courseID string) string { return strings.TrimPrefix(courseID, "course_") }

func studyCollect(w *work) (string, error) {
	in, err := w.userInputs()
	if err != nil {
		return "", err
	}
	var missing []string
	for i := range in.Courses {
		c := &in.Courses[i]
		if c.CourseID == "" {
			c.CourseID = "course_" + strings.ToLower(strings.Join(strings.Fields(c.CourseName), "_"))
		}
		if c.MidtermDate == "" {
			missing = append(missing, c.CourseName)
		}
	}
	if in.SharedConstraints.MaxMinutesPerDay == 0 {
		in.SharedConstraints.MaxMinutesPerDay = 240
	}
	files, err := w.files()
	if err != nil {
		return "", err
	}
	reg := make(map[string]registeredFile, len(files))
	var b strings.Builder
	fmt.Fprintf(&b, "Collected %d course(s) and %d file(s)\n", len(in.Courses), len(files))
	for _, c := range in.Courses {
		fmt.Fprintf(&b, "  %s (%s): midterm %s\n", c.CourseName, c.CourseID, orMissing(c.MidtermDate))
	}
	for i, f := range files {
		id := fmt.Sprintf("file_%03d", i+1)
		rf := registeredFile{Filename: f.Name, ContentType: contentType(f.Name), SizeBytes: f.Size, StorageURI: "hearth://files/" + f.SHA256,
			SHA256: f.SHA256, UploadStatus: "uploaded"}
		for _, c := range in.Courses {
			if strings.Contains(strings.ToLower(f.Name), shortID(c.CourseID)) {
				rf.CourseIDs = append(rf.CourseIDs, c.CourseID)
			}
		}
		if len(rf.CourseIDs) == 0 {
			rf.IsShared = true
			for _, c := range in.Courses {
				rf.CourseIDs = append(rf.CourseIDs, c.CourseID)
			}
		}
		reg[id] = rf
		fmt.Fprintf(&b, "  %s: %s (%d bytes, sha256 %.12s) for %s\n", id, f.Name, f.Size, f.SHA256, strings.Join(rf.CourseIDs, ", "))
	}
	for _, s := range []struct {
		name string
		v    any
	}{{"user_inputs", in}, {"file_registry", reg}, {"status", "collecting_inputs"}} {
		if err := w.save(s.name, s.v); err != nil {
			return "", err
		}
	}
	w.art.KeyDecisions = []string{fmt.Sprintf("%d courses, %d files registered by sha256 + size", len(in.Courses), len(reg))}
	if len(missing) > 0 {
		w.art.PotentialGotchas = []string{"no midterm date yet for " + strings.Join(missing, ", ")}
		fmt.Fprintf(&b, "missing midterm dates: %s (the stage cannot be left until they are given)\n", strings.Join(missing, ", "))
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

func orMissing(s string) string {
	if s == "" {
		return "MISSING"
	}
	return s
}

func contentType(name string) string {
	switch {
	case strings.HasSuffix(name, ".md"):
		return "text/markdown"
	case strings.HasSuffix(name, ".pdf"):
		return "application/pdf"
	}
	return "text/plain"
}

func studyIngest(w *work) (string, error) {
	size, err := w.intArg("chunk_lines", 8)
	if err != nil {
		return "", err
	}
	in, err := w.userInputs()
	if err != nil {
		return "", err
	}
	reg := map[string]registeredFile{}
	if _, err := w.load("file_registry", &reg); err != nil {
		return "", err
	}
	st := ingestionState{Files: map[string]*fileIngestion{}}
	if _, err := w.load("ingestion_state", &st); err != nil {
		return "", err
	}
	if st.Files == nil {
		st.Files = map[string]*fileIngestion{}
	}
	files, err := w.files()
	if err != nil {
		return "", err
	}
	byName := make(map[string]sdk.File, len(files))
	for _, f := range files {
		byName[f.Name] = f
	}
	names := make(map[string]string, len(in.Courses))
	for _, c := range in.Courses {
		names[c.CourseID] = c.CourseName
	}
	var did, skipped int
	ids := make([]string, 0, len(reg))
	for id := range reg {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	for _, id := range ids {
		rf := reg[id]
		f, ok := byName[rf.Filename]
		if !ok {
			return "", sdk.Permanent(fmt.Errorf("workshop: study.ingest: file_registry lists %s (%s), which is not attached to the run", id, rf.Filename))
		}
		// The host is asked about the file by its name in the run; it is
		// read where the host keeps it.
		var data []byte
		if err := w.use("Read", sdk.KindRead, f.Name, func() (err error) {
			data, err = os.ReadFile(f.Path)
			return err
		}); err != nil {
			return "", err
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		topics := topicOfLines(lines)
		total := (len(lines) + size - 1) / size
		var done []int
		if w.run != nil {
			if done, err = w.run.DoneChunks(w.ctx, f.Name); err != nil {
				return "", err
			}
		}
		fi := st.Files[id]
		if fi == nil {
			fi = &fileIngestion{FailedChunks: []int{}}
			st.Files[id] = fi
		}
		fi.Chunking.Mode, fi.Chunking.MaxLinesPerChunk, fi.Chunking.TotalChunks = "line_window", size, total
		fileDid := 0
		for c := range total {
			if slices.Contains(done, c) {
				skipped++
				continue
			}
			if err := w.pause(); err != nil {
				return "", err
			}
			for _, ev := range chunkEvidence(lines, topics, c, size) {
				for _, cid := range rf.CourseIDs {
					st.add(cid, ev.topic, ev.summary, id, c)
				}
			}
			fi.ProcessedChunks = len(done) + fileDid + 1
			fi.Status = "partial"
			if fi.ProcessedChunks == total {
				fi.Status = "complete"
			}
			// The chunk's output is durable before the chunk is marked: a
			// crash in between only does the chunk again.
			if err := w.save("ingestion_state", st); err != nil {
				return "", err
			}
			if w.run != nil {
				if err := w.run.MarkChunk(w.ctx, f.Name, c); err != nil {
					return "", err
				}
			}
			fileDid++
			did++
			if n := w.cmd.CrashAfterChunks; n > 0 && w.attempt() == 1 && did == n {
				w.cb.Logger().Warn("crashing on purpose, as crash_after_chunks asks", "chunks", did)
				w.a.crash()
			}
		}
		if fi.ProcessedChunks == 0 && total == len(done) {
			fi.ProcessedChunks, fi.Status = total, "complete"
		}
		fmt.Fprintf(&b, "  %s %s: %d chunk(s) of %d lines, %d done now, %d done before\n", id, rf.Filename, total, size, fileDid, total-fileDid)
	}
	if err := w.save("ingestion_state", st); err != nil {
		return "", err
	}
	w.metrics["chunks_done"] = float64(did)
	w.metrics["chunks_skipped"] = float64(skipped)
	w.metrics["topics"] = float64(len(st.Evidence))
	w.art.KeyDecisions = []string{fmt.Sprintf("%d topics found in %d files", len(st.Evidence), len(ids))}
	w.art.NewPatterns = []string{"chunks are line windows keyed by file and index (idempotency key file_id + chunk_index)"}
	head := fmt.Sprintf("Ingested %d file(s) on attempt %d: %d chunk(s) processed now, %d skipped (done before), %d topic(s) found\n", len(ids), w.attempt(), did, skipped, len(st.Evidence))
	for _, ev := range st.Evidence {
		fmt.Fprintf(&b, "  %s: %s (chunks %s)\n", names[ev.CourseID], ev.Topic, strings.Join(ev.SourceChunks, ", "))
	}
	return head + strings.TrimRight(b.String(), "\n"), nil
}

// crash ends the plugin process, for crash_after_chunks.
func (a *Agent) crash() {
	if a.exit != nil {
		a.exit(3)
		return
	}
	os.Exit(3)
}

// topicOfLines gives each line the "## " heading it falls under.
func topicOfLines(lines []string) []string {
	out := make([]string, len(lines))
	cur := ""
	for i, l := range lines {
		if t, ok := strings.CutPrefix(strings.TrimSpace(l), "## "); ok {
			cur = strings.TrimSpace(t)
		}
		out[i] = cur
	}
	return out
}

type chunkTopic struct{ topic, summary string }

// chunkEvidence lists the topics chunk c covers, each with its first line
// of content in the chunk.
func chunkEvidence(lines, topics []string, c, size int) []chunkTopic {
	var out []chunkTopic
	for i := c * size; i < min((c+1)*size, len(lines)); i++ {
		t := topics[i]
		l := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(lines[i]), "-*# "))
		if t == "" || l == "" || l == t {
			continue
		}
		if len(out) == 0 || out[len(out)-1].topic != t {
			out = append(out, chunkTopic{topic: t, summary: l})
		}
	}
	return out
}

func (st *ingestionState) add(courseID, topic, summary, file string, chunk int) {
	ref := fmt.Sprintf("%s:%d", file, chunk)
	for _, ev := range st.Evidence {
		if ev.CourseID == courseID && ev.Topic == topic {
			if !slices.Contains(ev.SourceChunks, ref) {
				ev.SourceChunks = append(ev.SourceChunks, ref)
			}
			if !slices.Contains(ev.SourceFiles, file) {
				ev.SourceFiles = append(ev.SourceFiles, file)
			}
			return
		}
	}
	st.Evidence = append(st.Evidence, &evidence{CourseID: courseID, Topic: topic, EvidenceSummary: summary, SourceFiles: []string{file}, SourceChunks: []string{ref}})
}

func studyEstimate(w *work) (string, error) {
	var st ingestionState
	if _, err := w.load("ingestion_state", &st); err != nil {
		return "", err
	}
	es := estimationState{UncertaintyFlags: []string{}}
	for id, f := range st.Files {
		if f.Status != "complete" {
			es.UncertaintyFlags = append(es.UncertaintyFlags, fmt.Sprintf("%s is %s: %s", id, f.Status, f.Warning))
		}
	}
	sort.Strings(es.UncertaintyFlags)
	var b strings.Builder
	total := 0
	for _, ev := range st.Evidence {
		m := min(30+30*len(ev.SourceChunks), 180)
		e := topicEstimate{CourseID: ev.CourseID, Topic: ev.Topic, EstimatedMinutes: m, Priority: "low", Confidence: 0.9}
		switch {
		case m >= 90:
			e.Priority = "high"
		case m >= 60:
			e.Priority = "medium"
		}
		if len(es.UncertaintyFlags) > 0 {
			e.Confidence = 0.6
		}
		total += m
		es.TopicEstimates = append(es.TopicEstimates, e)
		fmt.Fprintf(&b, "  %-14s %-32s %3d min  %s\n", shortID(e.CourseID), e.Topic, m, e.Priority)
	}
	if err := w.save("estimation_state", es); err != nil {
		return "", err
	}
	w.metrics["estimated_minutes"] = float64(total)
	w.art.KeyDecisions = []string{fmt.Sprintf("%d topics, %d minutes in all; more source chunks, more time", len(es.TopicEstimates), total)}
	return fmt.Sprintf("Estimated %d topic(s), %d minutes in all\n%s", len(es.TopicEstimates), total, strings.TrimRight(b.String(), "\n")), nil
}

const dateLayout = time.DateOnly

func studyPlan(w *work) (string, error) {
	in, err := w.userInputs()
	if err != nil {
		return "", err
	}
	var es estimationState
	if _, err := w.load("estimation_state", &es); err != nil {
		return "", err
	}
	courses := slices.Clone(in.Courses)
	sort.SliceStable(courses, func(i, j int) bool { return courses[i].MidtermDate < courses[j].MidtermDate })
	var last time.Time
	for _, c := range courses {
		d, err := time.Parse(dateLayout, c.MidtermDate)
		if err != nil {
			return "", sdk.Permanent(fmt.Errorf("workshop: study.plan: course %s has midterm date %q; want YYYY-MM-DD", c.CourseName, c.MidtermDate))
		}
		if d.After(last) {
			last = d
		}
	}
	start := last.AddDate(0, 0, -13)
	if in.StartDate != "" {
		if start, err = time.Parse(dateLayout, in.StartDate); err != nil {
			return "", sdk.Permanent(fmt.Errorf("workshop: study.plan: start_date %q: want YYYY-MM-DD", in.StartDate))
		}
	}
	if start.After(last) {
		return "", sdk.Permanent(fmt.Errorf("workshop: study.plan: start_date %s is after the last midterm, %s", start.Format(dateLayout), last.Format(dateLayout)))
	}
	capacity := max(in.SharedConstraints.MaxMinutesPerDay, 60)
	rest := in.SharedConstraints.PreferredRestDay
	var days []time.Time
	for d := start; !d.After(last); d = d.AddDate(0, 0, 1) {
		days = append(days, d)
	}
	load := make(map[string]int)
	rows := make(map[string][]planRow)
	midterms := make(map[string]string)
	for _, c := range courses {
		midterms[c.MidtermDate] = c.CourseName
	}
	isRest := func(d time.Time) bool {
		return strings.EqualFold(d.Weekday().String(), rest) && midterms[d.Format(dateLayout)] == ""
	}
	var unplaced []string
	for _, c := range courses {
		ests := slices.DeleteFunc(slices.Clone(es.TopicEstimates), func(e topicEstimate) bool { return e.CourseID != c.CourseID })
		sort.SliceStable(ests, func(i, j int) bool { return ests[i].EstimatedMinutes > ests[j].EstimatedMinutes })
		for _, e := range ests {
			// The least loaded day before the course's midterm, the earliest
			// of equals: the work spreads over the days there are.
			best := ""
			for _, d := range days {
				key := d.Format(dateLayout)
				if key >= c.MidtermDate || isRest(d) || midterms[key] != "" || load[key]+e.EstimatedMinutes > capacity {
					continue
				}
				if best == "" || load[key] < load[best] {
					best = key
				}
			}
			if best == "" {
				unplaced = append(unplaced, c.CourseName+": "+e.Topic)
				continue
			}
			load[best] += e.EstimatedMinutes
			rows[best] = append(rows[best], planRow{Date: best, Course: c.CourseName, Topic: e.Topic, TaskDescription: "Study and practice: " + e.Topic,
				EstimatedMinutes: e.EstimatedMinutes, Priority: e.Priority, Status: "planned"})
		}
	}
	ps := planningState{PlanVersion: w.round(), StartDate: start.Format(dateLayout), LastMidtermDate: last.Format(dateLayout), Unplaced: unplaced}
	// Every day is represented: rest days, exam days and free days too.
	for _, d := range days {
		key := d.Format(dateLayout)
		switch {
		case midterms[key] != "":
			ps.PlanRows = append(ps.PlanRows, planRow{Date: key, Course: midterms[key], Topic: "Midterm", TaskDescription: "Midterm exam: light review in the morning", EstimatedMinutes: 30, Priority: "high", Status: "planned"})
		case isRest(d):
			ps.PlanRows = append(ps.PlanRows, planRow{Date: key, Course: "-", Topic: "Rest", TaskDescription: "Rest day (" + rest + ")", Status: "planned"})
		case len(rows[key]) == 0:
			next := nextMidterm(courses, key)
			ps.PlanRows = append(ps.PlanRows, planRow{Date: key, Course: next, Topic: "Review", TaskDescription: "Mixed review and past-paper questions", EstimatedMinutes: 60, Priority: "medium", Status: "planned"})
		default:
			ps.PlanRows = append(ps.PlanRows, rows[key]...)
		}
	}
	if err := w.save("planning_state", ps); err != nil {
		return "", err
	}
	w.metrics["days"] = float64(len(days))
	w.metrics["rows"] = float64(len(ps.PlanRows))
	w.art.KeyDecisions = []string{fmt.Sprintf("plan v%d: %s to %s, at most %d min a day, %s off", ps.PlanVersion, ps.StartDate, ps.LastMidtermDate, capacity, orNone(rest))}
	if len(unplaced) > 0 {
		w.art.PotentialGotchas = []string{"did not fit: " + strings.Join(unplaced, "; ")}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Study plan v%d, %s to %s (%d days, %d rows)\n", ps.PlanVersion, ps.StartDate, ps.LastMidtermDate, len(days), len(ps.PlanRows))
	for _, r := range ps.PlanRows {
		fmt.Fprintf(&b, "  %s %s  %-12s %-30s %3d min\n", r.Date, weekday(r.Date), r.Course, r.Topic, r.EstimatedMinutes)
	}
	if len(unplaced) > 0 {
		fmt.Fprintf(&b, "did not fit: %s\n", strings.Join(unplaced, "; "))
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

func weekday(date string) string {
	d, err := time.Parse(dateLayout, date)
	if err != nil {
		return "   "
	}
	return d.Weekday().String()[:3]
}

func orNone(s string) string {
	if s == "" {
		return "no day"
	}
	return s
}

func nextMidterm(courses []course, day string) string {
	for _, c := range courses {
		if c.MidtermDate > day {
			return c.CourseName
		}
	}
	return "-"
}

func studyReview(w *work) (string, error) {
	in, err := w.userInputs()
	if err != nil {
		return "", err
	}
	var ps planningState
	if _, err := w.load("planning_state", &ps); err != nil {
		return "", err
	}
	capacity := max(in.SharedConstraints.MaxMinutesPerDay, 60)
	load := make(map[string]int)
	dates := make(map[string]bool)
	for _, r := range ps.PlanRows {
		load[r.Date] += r.EstimatedMinutes
		dates[r.Date] = true
	}
	rv := &review{ResultType: "approved_plan", RevisionReasons: []string{}, ValidationReport: map[string]bool{"coverage_ok": len(ps.Unplaced) == 0, "date_range_ok": true, "load_balance_ok": true}}
	start, _ := time.Parse(dateLayout, ps.StartDate)
	last, _ := time.Parse(dateLayout, ps.LastMidtermDate)
	for d := start; !d.After(last); d = d.AddDate(0, 0, 1) {
		if !dates[d.Format(dateLayout)] {
			rv.ValidationReport["date_range_ok"] = false
			rv.RevisionReasons = append(rv.RevisionReasons, "no row for "+d.Format(dateLayout))
		}
	}
	for day, m := range load {
		if m > capacity {
			rv.ValidationReport["load_balance_ok"] = false
			rv.RevisionReasons = append(rv.RevisionReasons, fmt.Sprintf("%s holds %d minutes, over %d", day, m, capacity))
		}
	}
	sort.Strings(rv.RevisionReasons)
	switch {
	case !rv.ValidationReport["date_range_ok"] || !rv.ValidationReport["load_balance_ok"]:
		rv.ResultType = "needs_revision"
	case !rv.ValidationReport["coverage_ok"]:
		rv.ResultType = "capacity_limited_plan"
		rv.RevisionReasons = append(rv.RevisionReasons, "did not fit: "+strings.Join(ps.Unplaced, "; "))
	}
	ps.Review = rv
	if err := w.save("planning_state", ps); err != nil {
		return "", err
	}
	q := 1.0
	for _, ok := range rv.ValidationReport {
		if !ok {
			q -= 0.25
		}
	}
	w.metrics["quality"] = q
	w.art.KeyDecisions = []string{"review: " + rv.ResultType}
	out := fmt.Sprintf("Review of plan v%d: %s\ncoverage_ok=%t date_range_ok=%t load_balance_ok=%t", ps.PlanVersion, rv.ResultType,
		rv.ValidationReport["coverage_ok"], rv.ValidationReport["date_range_ok"], rv.ValidationReport["load_balance_ok"])
	for _, r := range rv.RevisionReasons {
		out += "\n- " + r
	}
	return out, nil
}

func studyPublish(w *work) (string, error) {
	var ps planningState
	if _, err := w.load("planning_state", &ps); err != nil {
		return "", err
	}
	var md, csv strings.Builder
	fmt.Fprintf(&md, "# Study plan (v%d), %s to %s\n\n| date | course | topic | minutes |\n| --- | --- | --- | --- |\n", ps.PlanVersion, ps.StartDate, ps.LastMidtermDate)
	csv.WriteString("date,course,topic,task_description,estimated_minutes,priority,status\n")
	for _, r := range ps.PlanRows {
		fmt.Fprintf(&md, "| %s %s | %s | %s | %d |\n", r.Date, weekday(r.Date), r.Course, r.Topic, r.EstimatedMinutes)
		fmt.Fprintf(&csv, "%s,%q,%q,%q,%d,%s,%s\n", r.Date, r.Course, r.Topic, r.TaskDescription, r.EstimatedMinutes, r.Priority, r.Status)
	}
	result := "unreviewed"
	if ps.Review != nil {
		result = ps.Review.ResultType
	}
	arts := map[string]any{"markdown_path": "outputs/study_plan.md", "csv_path": "outputs/study_plan.csv", "rows": len(ps.PlanRows), "review": result,
		"note": "the files' contents are this task's output: hearth runs show RUN --outputs"}
	if err := w.save("artifacts", arts); err != nil {
		return "", err
	}
	if err := w.save("status", "completed"); err != nil {
		return "", err
	}
	for _, p := range []string{"outputs/study_plan.md", "outputs/study_plan.csv"} {
		if err := w.wrote(p); err != nil {
			return "", err
		}
	}
	w.art.KeyDecisions = []string{fmt.Sprintf("published plan v%d (%s) as markdown and CSV", ps.PlanVersion, result)}
	return md.String() + "\n" + strings.TrimRight(csv.String(), "\n"), nil
}
