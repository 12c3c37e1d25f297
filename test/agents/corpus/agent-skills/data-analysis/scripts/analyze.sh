#!/bin/sh
head -n 1 "$1" | tr ',' '\n'
