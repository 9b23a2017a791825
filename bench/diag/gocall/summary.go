package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// summary reads CSV files of gocall and gocall-c rows and prints, per
// label and rank count, one markdown table: per size and variant the
// median over repetitions of the max-over-ranks time per call, its ratio
// to the C program's median (variant c, same label, ranks and size), and
// the median context switches per call per rank (mean over ranks).
//
// With -min first, it reports the fastest repetition instead of the
// median (a machine shared with other work: the least disturbed run).
func summary(files []string, out io.Writer) error {
	stat, statName := median, "median"
	if len(files) > 0 && files[0] == "-min" {
		stat, statName, files = minimum, "fastest", files[1:]
	}
	if len(files) == 0 {
		return fmt.Errorf("usage: gocall summary [-min] FILE.csv...")
	}
	type key struct {
		label   string
		ranks   int
		variant string
		bytes   int
	}
	us := map[key][]float64{}
	cs := map[key][]float64{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		r := csv.NewReader(fh)
		r.FieldsPerRecord = -1
		r.Comment = '#'
		rows, err := r.ReadAll()
		fh.Close()
		if err != nil {
			return fmt.Errorf("%s: %v", f, err)
		}
		for _, row := range rows {
			if len(row) != 17 || row[0] == "prog" {
				continue
			}
			ranks, err1 := strconv.Atoi(row[2])
			bytes, err2 := strconv.Atoi(row[6])
			t, err3 := strconv.ParseFloat(row[8], 64)
			c, err4 := strconv.ParseFloat(row[11], 64)
			if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
				continue
			}
			v := row[4]
			if g := row[5]; g != "" && g != "-" {
				v += "/" + g
			}
			k := key{row[1], ranks, v, bytes}
			us[k] = append(us[k], t)
			cs[k] = append(cs[k], c)
		}
	}
	type group struct {
		label string
		ranks int
	}
	groups := map[group]bool{}
	variants := map[group]map[string]bool{}
	sizes := map[group]map[int]bool{}
	for k := range us {
		g := group{k.label, k.ranks}
		groups[g] = true
		if variants[g] == nil {
			variants[g], sizes[g] = map[string]bool{}, map[int]bool{}
		}
		variants[g][k.variant] = true
		sizes[g][k.bytes] = true
	}
	var gs []group
	for g := range groups {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].label != gs[j].label {
			return gs[i].label < gs[j].label
		}
		return gs[i].ranks < gs[j].ranks
	})
	for _, g := range gs {
		var vs []string
		for v := range variants[g] {
			vs = append(vs, v)
		}
		sort.Slice(vs, func(i, j int) bool { return variantOrder(vs[i]) < variantOrder(vs[j]) })
		var bs []int
		for b := range sizes[g] {
			bs = append(bs, b)
		}
		sort.Ints(bs)
		reps := 0
		for k, x := range us {
			if k.label == g.label && k.ranks == g.ranks {
				reps = max(reps, len(x))
			}
		}
		fmt.Fprintf(out, "\n%s, %d ranks: us per call (max over ranks of each rank's average; %s of up to %d repetitions), (x the C program's c, or c-spin for spin variants), context switches per call per rank (mean over ranks)\n\n",
			orDash(g.label), g.ranks, statName, reps)
		fmt.Fprintf(out, "| bytes | %s |\n|---|%s\n", strings.Join(vs, " | "), strings.Repeat("---|", len(vs)))
		for _, b := range bs {
			cells := make([]string, len(vs))
			for i, v := range vs {
				k := key{g.label, g.ranks, v, b}
				if len(us[k]) == 0 {
					cells[i] = "-"
					continue
				}
				m := stat(us[k])
				cell := fmt.Sprintf("%.2f", m)
				ref := reference(v)
				if c := stat(us[key{g.label, g.ranks, ref, b}]); c > 0 && v != ref {
					cell += fmt.Sprintf(" (%.2fx)", m/c)
				}
				cell += fmt.Sprintf(" %.3f", stat(cs[k]))
				cells[i] = cell
			}
			fmt.Fprintf(out, "| %d | %s |\n", b, strings.Join(cells, " | "))
		}
	}
	return nil
}

// reference is the C program's variant a variant is compared with: c-spin
// for the spin variants, c (blocking MPI_Allreduce) for all others.
func reference(v string) string {
	base, _, _ := strings.Cut(v, "/")
	if strings.HasSuffix(base, "-spin") {
		return "c-spin"
	}
	return "c"
}

// variantOrder puts the C program first, then plain mpi.Allreduce (go),
// then the other Go variants; within each, before (off) first, then auto,
// pace, procs.
func variantOrder(v string) string {
	base, mode, _ := strings.Cut(v, "/")
	m := map[string]string{"off": "0", "auto": "1", "pace": "2", "procs": "3"}[mode]
	if m == "" {
		m = "4" + mode
	}
	switch {
	case strings.HasPrefix(base, "c"):
		return "0" + base
	case base == "go":
		return "1" + m
	}
	return "2" + base + "/" + m
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func minimum(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	m := x[0]
	for _, v := range x[1:] {
		m = min(m, v)
	}
	return m
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	y := append([]float64(nil), x...)
	sort.Float64s(y)
	n := len(y)
	if n%2 == 1 {
		return y[n/2]
	}
	return (y[n/2-1] + y[n/2]) / 2
}
