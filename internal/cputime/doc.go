// Package cputime reads the process's CPU time, for the experiments that
// report how many cores a processor or a server kept busy (scheduler's
// host-core measure, qp bench serve's server and generator CPU).
package cputime
