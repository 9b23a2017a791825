/* work: a fixed amount of ordinary work (a pointer chase over an L1-sized
 * ring plus arithmetic), timed: ns per iteration. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(int argc,char**argv){ int n=1024; int *next=malloc(n*sizeof(int)); for(int i=0;i<n;i++) next[i]=(i*577+1)%n;
 long iters = argc>1?atol(argv[1]):20000000; volatile long sink=0; int p=0; long acc=0;
 double best=1e30; for(int r=0;r<5;r++){ double t0=now(); for(long i=0;i<iters;i++){ p=next[p]; acc+=p*3+(acc>>3);} double t=(now()-t0)/iters; if(t<best)best=t;}
 sink=acc; printf("%.3f ns/iter\n",best); return 0;}
