package main

import "go.uber.org/zap/zapcore"

// zapLevel maps -v N to zap's level: logr's V(N) is zap's -N.
func zapLevel(verbosity int) zapcore.Level { return zapcore.Level(-verbosity) }
