// This file owns the saved form of a Calibration: MarshalJSON, and
// UnmarshalJSON, which checks every part of a state before installing it.

package history

import (
	"encoding/json"
	"errors"
)

// calibrationState is the saved form (version 2): the observations of the
// window, oldest first; those held back and their kind; the rejections in
// force (sent, limit, age); the budget last asked for.
type calibrationState struct {
	Version      int      `json:"version"`
	Observations [][2]int `json:"observations"`
	Held         [][2]int `json:"held,omitempty"`
	HeldKind     string   `json:"held_kind,omitempty"`
	Rejections   [][3]int `json:"rejections,omitempty"`
	Asked        int      `json:"asked,omitempty"`
}

// MarshalJSON saves the whole state, as
// {"version":2,"observations":[[sent,reported],...],...}: the observations
// the model is fitted to, oldest first, and what is held back or in force
// besides them, so that a restored Calibration behaves exactly as this one.
func (c *Calibration) MarshalJSON() ([]byte, error) {
	c.mu.Lock()
	var buf windowBuf
	w := c.window(&buf)
	st := calibrationState{Version: 2, Observations: pairs(w), Asked: c.asked}
	if c.nheld > 0 {
		st.Held, st.HeldKind = pairs(c.held[:c.nheld]), c.heldKind.String()
	}
	for _, r := range c.rej[:c.nrej] {
		st.Rejections = append(st.Rejections, [3]int{r.sent, r.limit, r.age})
	}
	c.mu.Unlock()
	return json.Marshal(st)
}

func pairs(obs []observation) [][2]int {
	out := make([][2]int, len(obs))
	for i, o := range obs {
		out[i] = [2]int{o.sent, o.reported}
	}
	return out
}

// UnmarshalJSON restores a state saved by MarshalJSON, replacing c's, so
// that c gives the same Budget as the Calibration saved. Every observation
// must be one Observe accepts (counts positive, ratio within [1/8, 8]) and
// every part within its size; otherwise, and for an unknown version or
// malformed JSON, c is left unchanged and the error wraps
// [ErrInvalidCalibration]. A version 1 state (observations only, as saved
// before) is replayed through Observe's rules.
func (c *Calibration) UnmarshalJSON(data []byte) error {
	var st calibrationState
	if err := json.Unmarshal(data, &st); err != nil {
		return errors.Join(ErrInvalidCalibration, err)
	}
	var fresh Calibration
	switch st.Version {
	case 1:
		for _, o := range st.Observations {
			fresh.Observe(o[0], o[1])
		}
	case 2:
		if err := fresh.restore(&st); err != nil {
			return err
		}
	default:
		return ErrInvalidCalibration
	}
	c.mu.Lock()
	c.obs, c.n, c.at, c.fit = fresh.obs, fresh.n, fresh.at, fresh.fit
	c.held, c.nheld, c.heldKind = fresh.held, fresh.nheld, fresh.heldKind
	c.rej, c.nrej, c.asked = fresh.rej, fresh.nrej, fresh.asked
	c.mu.Unlock()
	return nil
}

// restore installs a version 2 state into the fresh c, checking every part.
func (c *Calibration) restore(st *calibrationState) error {
	valid := func(o [2]int) bool {
		r := float64(o[1]) / float64(o[0])
		return o[0] > 0 && o[1] > 0 && r >= minRatio && r <= maxRatio
	}
	if len(st.Observations) > calibrationWindow || len(st.Held) >= relearnAfter ||
		len(st.Rejections) > maxRejections || st.Asked < 0 {
		return ErrInvalidCalibration
	}
	for _, o := range st.Observations {
		if !valid(o) {
			return ErrInvalidCalibration
		}
		c.push(observation{o[0], o[1]})
	}
	if len(st.Held) > 0 {
		switch st.HeldKind {
		case VerdictOutlier.String():
			c.heldKind = VerdictOutlier
		case VerdictTruncated.String():
			c.heldKind = VerdictTruncated
		default:
			return ErrInvalidCalibration
		}
	}
	for i, o := range st.Held {
		if !valid(o) {
			return ErrInvalidCalibration
		}
		c.held[i] = observation{o[0], o[1]}
	}
	c.nheld = len(st.Held)
	for i, r := range st.Rejections {
		if q := float64(r[1]) / float64(r[0]); r[0] <= 0 || r[1] <= 0 || !(q >= minRatio && q <= maxRatio) ||
			r[2] < 0 || r[2] >= calibrationWindow {
			return ErrInvalidCalibration
		}
		c.rej[i] = rejection{r[0], r[1], r[2]}
	}
	c.nrej = len(st.Rejections)
	c.asked = st.Asked
	var buf windowBuf
	c.fit = fitCalibration(c.window(&buf))
	return nil
}
