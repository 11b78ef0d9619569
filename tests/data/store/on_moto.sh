#!/usr/bin/env bash
# Runs a test written for the test RGW against moto's S3 instead (a second S3
# implementation): sts_moto.sh starts moto_server, and the command gets the
# STRATA_TEST_S3_* variables pointing at it. moto accepts any keys and, with
# S3_UPLOAD_PART_MIN_SIZE, the tests' 64 KiB parts (as the test RGW does).
#   on_moto.sh VENV_DIR COMMAND [ARGS...]
set -euo pipefail
venv=$1
shift
export S3_UPLOAD_PART_MIN_SIZE=65536
exec "$(dirname "$0")/sts_moto.sh" "$venv" bash -c \
  'STRATA_TEST_S3_ENDPOINT=$STRATA_TEST_STS_ENDPOINT STRATA_TEST_S3_ACCESS_KEY=testing STRATA_TEST_S3_SECRET_KEY=testing exec "$@"' \
  on_moto "$@"
