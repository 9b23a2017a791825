// Command samebits is the Go API twin of ../samebits.c: the same calls
// on the same inputs through dpml.Allreduce, the same lines printed.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/mpi"
)

func value(r, i int) float64 { return float64((r*7919+i*104729)%10007) / 7.3 }

func hash[T any](v []T) uint64 {
	var z T
	h := fnv.New64a()
	h.Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(z))))
	return h.Sum64()
}

func main() {
	dir := flag.String("o", "", "write rank-N.txt here")
	flag.Parse()
	if _, err := mpi.Init(); err != nil {
		log.Fatal(err)
	}
	defer mpi.Finalize()
	w := mpi.World()
	c, err := dpml.New(w)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	rank := w.Rank()
	f, err := os.Create(filepath.Join(*dir, fmt.Sprintf("rank-%d.txt", rank)))
	if err != nil {
		log.Fatal(err)
	}
	out := bufio.NewWriter(f)
	defer f.Close()
	defer out.Flush()
	for _, n := range []int{1, 5, 100, 1000, 5000, 70000} {
		fs, fr := make([]float32, n), make([]float32, n)
		ds, dr := make([]float64, n), make([]float64, n)
		for i := range n {
			fs[i], ds[i] = float32(value(rank, i)), value(rank, i)
		}
		for rep := range 3 {
			if err := dpml.Allreduce(c, fs, fr, mpi.OpSum); err != nil {
				log.Fatal(err)
			}
			if err := dpml.Allreduce(c, ds, dr, mpi.OpSum); err != nil {
				log.Fatal(err)
			}
			fmt.Fprintf(out, "rank %d float32 %d call %d %016x\n", rank, n, rep, hash(fr))
			fmt.Fprintf(out, "rank %d float64 %d call %d %016x\n", rank, n, rep, hash(dr))
		}
	}
}
