package dpml

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/plan"
)

// Plan specs are the text form of an Override, so that a plan can be named
// where only a string fits: a benchmark's -variants flag, the drop-in
// library's DPMLX_Set_plan, a results file. The grammar is generic, a
// variant name optionally followed by a key=value list, so a new variant or
// a new knob only adds a name:
//
//	spec    = variant [ ":" [ setting { "," setting } ] ]
//	variant = "auto" | "native" | "dpml" | "pipelined"   (case-insensitive)
//	setting = "l=" N | "k=" N | "intra=" ("auto"|"shm"|"cma"|"tree") | "r=" N | "seg=" BYTES
//	        | "offload=" ("host"|"sharp") | "inter=" ("mpi"|"ring")
//
// l is the number of leaders per node, k the pipeline depth, intra the
// intra-node data path, r the reduction tree's radix (intra=tree), seg
// the segment size (a byte count with an
// optional K, M or G suffix) and offload where the inter-node step runs
// (sharp: the in-network offload DPML_OFFLOAD attached, see offload.go; a
// call it cannot take runs on the host), inter the host's inter-node
// algorithm among the leaders (mpi: the MPI library's allreduce, the
// default; ring: the engine's ring reduce-scatter and allgather, inter.go).
// Examples: "auto" (the engine
// chooses: the zero Override), "native" (the MPI library's allreduce),
// "dpml:l=2", "pipelined:l=8,k=4,intra=cma", "auto:l=4" (l forced, the rest
// chosen), "dpml:intra=tree,r=8" (the small-message reduction tree),
// "dpml:intra=tree,offload=sharp" (node-level offload), "dpml:l=2,offload=sharp"
// (two leaders, each offloading its partition: socket level on two sockets),
// "pipelined:l=8,k=2,inter=ring" (the leaders' step by the ring),
// "auto:inter=mpi" (the built-in policy's plan with the MPI library's step).
//
// A spec says what is forced, exactly as an Override does: keys left out
// stay zero and are chosen by the engine. ParseOverride(o.Spec()) == o for
// every Override that ParseOverride can return.

// SpecKeys lists the setting keys of a plan spec, in the order Spec writes
// them.
var SpecKeys = []string{"l", "k", "intra", "r", "seg", "offload", "inter"}

// ParseOverride parses a plan spec (see the grammar above) into an Override.
// It rejects unknown variants and keys, repeated keys, values out of range,
// settings on "native" (the MPI library takes none) and k > 1 on "dpml"
// (the engine runs dpml with k = 1; "pipelined" is the variant with a
// pipeline depth), so that a spec never silently means something else.
func ParseOverride(spec string) (Override, error) {
	var o Override
	s := strings.TrimSpace(spec)
	name, list, hasList := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if name == "" {
		return o, fmt.Errorf("plan spec %q: no variant (want auto, native, dpml or pipelined, then optionally :key=value,...)", spec)
	}
	v, err := ParseVariant(name)
	if err != nil {
		return o, fmt.Errorf("plan spec %q: unknown variant %q (want auto, native, dpml or pipelined)", spec, name)
	}
	o.Variant = v
	if !hasList || strings.TrimSpace(list) == "" {
		return o, nil
	}
	if v == Native {
		return o, fmt.Errorf("plan spec %q: native takes no settings (it is the MPI library's allreduce)", spec)
	}
	seen := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		key, val, ok := strings.Cut(item, "=")
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		if !ok || key == "" || val == "" {
			return o, fmt.Errorf("plan spec %q: setting %q: want key=value (keys %s)", spec, strings.TrimSpace(item), strings.Join(SpecKeys, ", "))
		}
		if seen[key] {
			return o, fmt.Errorf("plan spec %q: %s given twice", spec, key)
		}
		seen[key] = true
		switch key {
		case "l", "k", "r":
			n, err := strconv.Atoi(val)
			if key == "r" && (err != nil || n < 1 || n > maxRadix) {
				return o, fmt.Errorf("plan spec %q: r=%s: want an integer from 1 to %d (the tree's radix)", spec, val, maxRadix)
			}
			if err != nil || n < 1 {
				what := map[string]string{"l": "leaders per node", "k": "the pipeline depth"}[key]
				return o, fmt.Errorf("plan spec %q: %s=%s: want a positive integer (%s)", spec, key, val, what)
			}
			switch key {
			case "l":
				o.Leaders = n
			case "k":
				o.Pipeline = n
			default:
				o.Radix = n
			}
		case "intra":
			in, err := ParseIntra(val)
			if err != nil {
				return o, fmt.Errorf("plan spec %q: intra=%s: want auto, shm, cma or tree", spec, val)
			}
			o.Intra = in
		case "offload":
			off, err := plan.ParseOffload(val)
			if err != nil || off == plan.OffloadAuto {
				return o, fmt.Errorf("plan spec %q: offload=%s: want host or sharp (leave it out for the engine's choice)", spec, val)
			}
			o.Offload = off
		case "inter":
			in, err := plan.ParseInter(val)
			if err != nil || in == plan.InterAuto || in == plan.InterSharp {
				return o, fmt.Errorf("plan spec %q: inter=%s: want mpi or ring (leave it out for the engine's choice; the in-network offload is offload=sharp)", spec, val)
			}
			o.Inter = in
		case "seg":
			n, err := config.ParseBytes(val)
			if err != nil || n < 1 || n > 1<<40 {
				return o, fmt.Errorf("plan spec %q: seg=%s: want a positive byte count such as 64K or 1M", spec, val)
			}
			o.SegmentBytes = int(n)
		default:
			return o, fmt.Errorf("plan spec %q: unknown key %q (want %s)", spec, key, strings.Join(SpecKeys, ", "))
		}
	}
	if o.Radix != 0 && o.Intra != IntraTree {
		return o, fmt.Errorf("plan spec %q: r (the tree's radix) needs intra=tree", spec)
	}
	if v == DPML && o.Pipeline > 1 {
		return o, fmt.Errorf("plan spec %q: dpml runs k=1; use pipelined:...,k=%d for a pipeline", spec, o.Pipeline)
	}
	return o, nil
}

// Spec writes o as a plan spec in canonical form: lower case, the keys that
// are set in the order of SpecKeys, seg with the largest exact binary
// suffix. The zero Override is "auto".
func (o Override) Spec() string {
	var b strings.Builder
	b.WriteString(variantName(o.Variant))
	sep := byte(':')
	add := func(k, v string) {
		b.WriteByte(sep)
		sep = ','
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
	}
	if o.Leaders != 0 {
		add("l", strconv.Itoa(o.Leaders))
	}
	if o.Pipeline != 0 {
		add("k", strconv.Itoa(o.Pipeline))
	}
	if o.Intra != IntraAuto {
		add("intra", o.Intra.String())
	}
	if o.Radix != 0 {
		add("r", strconv.Itoa(o.Radix))
	}
	if o.SegmentBytes != 0 {
		add("seg", config.FormatBytes(int64(o.SegmentBytes)))
	}
	if o.Offload != plan.OffloadAuto {
		add("offload", o.Offload.String())
	}
	if o.Inter != plan.InterAuto {
		add("inter", o.Inter.String())
	}
	return b.String()
}

// Spec describes a plan that ran (or would run) as a plan spec that forces
// it again: the variant, the active leaders, the pipeline depth, the
// intra-node path, the segment size, where an offload is attached or
// was asked for, where the inter-node step ran, and the host's inter-node
// algorithm when it is not the MPI library's (the default). A native plan is "native"; the
// zero Plan (no call made yet) is "none", which no parser accepts. The
// drop-in library reports this through DPMLX_Last_plan.
func (p Plan) Spec() string {
	switch p.Variant {
	case Auto:
		return "none"
	case Native:
		return variantName(Native)
	}
	o := Override{Variant: p.Variant, Leaders: p.Leaders, Pipeline: p.Pipeline, Intra: p.Intra, Radix: p.Radix, Offload: p.Offload}
	if p.Inter != plan.InterMPI {
		o.Inter = p.Inter
	}
	if o.Intra == IntraAuto {
		o.Intra = IntraShm // a resolved plan names its transport
	}
	if p.SegElems > 0 && p.ElemSize > 0 {
		o.SegmentBytes = p.SegElems * p.ElemSize
	}
	return o.Spec()
}

func variantName(v Variant) string {
	if v == Auto {
		return "auto"
	}
	return v.String()
}
