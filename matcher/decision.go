package matcher

import (
	"strconv"
	"strings"
)

// Choice is what a Decision tells the host to do.
type Choice int

// The choices. The zero Choice is none of them.
const (
	// Reuse the winner: the best eligible total is strictly above the
	// threshold.
	Reuse Choice = iota + 1
	// SpawnNoCandidates: the agent has no session, or all were excluded.
	SpawnNoCandidates
	// SpawnAllBusy: every candidate is at or above its capacity.
	SpawnAllBusy
	// SpawnBelowThreshold: no eligible candidate scored above the
	// threshold.
	SpawnBelowThreshold
)

var choiceNames = [...]string{
	Reuse:               "reuse",
	SpawnNoCandidates:   "spawn-no-candidates",
	SpawnAllBusy:        "spawn-all-busy",
	SpawnBelowThreshold: "spawn-below-threshold",
}

// String returns "reuse", "spawn-no-candidates", "spawn-all-busy" or
// "spawn-below-threshold".
func (o Choice) String() string {
	if o >= Reuse && int(o) < len(choiceNames) {
		return choiceNames[o]
	}
	return "Choice(" + strconv.Itoa(int(o)) + ")"
}

// Spawn reports whether the choice asks for a new session.
func (o Choice) Spawn() bool { return o > Reuse && int(o) < len(choiceNames) }

// Decision is the matcher's answer for one task, with what it is based on.
type Decision struct {
	Choice Choice
	// Winner is the ID of the session to reuse; empty unless Choice is
	// Reuse.
	Winner string
	// Dormant is true when the winner is dormant: the host rehydrates it.
	Dormant   bool
	Threshold float64
	// Weights are the Config's, with which [Ranked.Factors] shows each
	// candidate's factors.
	Weights Weights
	// Ranked holds the top candidates, best first, at most Config.TopK:
	// eligible ones by rank, then, if fewer than TopK are eligible, the best
	// full ones.
	Ranked []Ranked
	// Considered counts the candidates taken into account: all but the
	// excluded ones. Eligible counts those of them below capacity.
	// Excluded counts the candidates the caller excluded: by ID, or as
	// another owner's ([Index.DecideOwned]).
	Considered int
	Eligible   int
	Excluded   int
}

// settle sets the outcome from the counts and the ranking.
func (d *Decision) settle() {
	switch {
	case d.Considered == 0:
		d.Choice = SpawnNoCandidates
	case d.Eligible == 0:
		d.Choice = SpawnAllBusy
	case d.Ranked[0].Total > d.Threshold:
		d.Choice = Reuse
		d.Winner = d.Ranked[0].ID
		d.Dormant = d.Ranked[0].Dormant
	default:
		d.Choice = SpawnBelowThreshold
	}
}

// String explains the decision in one line, for logs:
//
//	reuse s-12 (0.83 > 0.60): dir 1.00 file 0.80 tech 1.00 fresh 0.95 load 1.00
//	spawn: best s-3 scored 0.41, not above 0.60: dir 0.50 file 0.20 tech - fresh 0.10 load 1.00
//	spawn: all 4 candidates busy
//
// A factor that does not apply to the task is shown as "-".
func (d Decision) String() string {
	var b strings.Builder
	switch d.Choice {
	case Reuse:
		b.WriteString("reuse ")
		if d.Dormant {
			b.WriteString("dormant ")
		}
		r := &d.Ranked[0]
		total, threshold := FormatScore(r.Total, d.Threshold)
		b.WriteString(r.ID + " (" + total + " > " + threshold + "): ")
		r.writeScores(&b, &d.Weights)
	case SpawnNoCandidates:
		b.WriteString("spawn: no candidates")
		if d.Excluded > 0 {
			b.WriteString(" (" + strconv.Itoa(d.Excluded) + " excluded)")
		}
	case SpawnAllBusy:
		if d.Considered == 1 {
			b.WriteString("spawn: the only candidate is busy")
		} else {
			b.WriteString("spawn: all " + strconv.Itoa(d.Considered) + " candidates busy")
		}
	case SpawnBelowThreshold:
		r := &d.Ranked[0]
		total, threshold := FormatScore(r.Total, d.Threshold)
		b.WriteString("spawn: best " + r.ID + " scored " + total + ", not above " + threshold + ": ")
		r.writeScores(&b, &d.Weights)
	default:
		b.WriteString(d.Choice.String())
	}
	return b.String()
}

// writeScores writes r's factors by label; like Weights.String, it
// leaves out a factor added after the seed's five while its weight is 0,
// so that logs read as they did for configurations that do not use it.
func (r *Ranked) writeScores(b *strings.Builder, w *Weights) {
	def := DefaultWeights()
	for i, f := range factors {
		if *f.weight(w) == 0 && *f.weight(&def) == 0 {
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.label + " ")
		if f.applied(&r.Applied) {
			b.WriteString(two(f.score(&r.Scores)))
		} else {
			b.WriteByte('-')
		}
	}
}

func two(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// FormatScore renders a total and the threshold it was compared with, both
// with the same number of decimals: two, or as many more as it takes for
// them to read differently when they differ. So a total just above 0.6
// reads "0.6004 > 0.6000", never "0.60 > 0.60", and one just below reads
// "0.5996", never "0.60". Equal values read alike: "0.60", "0.60" (a total
// equal to the threshold does not pass it). Every place that prints a
// score beside its threshold should use it.
func FormatScore(total, threshold float64) (string, string) {
	for prec := 2; prec <= 17; prec++ {
		t := strconv.FormatFloat(total, 'f', prec, 64)
		th := strconv.FormatFloat(threshold, 'f', prec, 64)
		if t != th || total == threshold {
			return t, th
		}
	}
	// Tiny values that differ past 17 decimals (or NaN): the shortest
	// spellings that tell every two floats apart.
	return strconv.FormatFloat(total, 'g', -1, 64), strconv.FormatFloat(threshold, 'g', -1, 64)
}
