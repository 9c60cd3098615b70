# One entry point for every job. `make synth` and `make test` work on a fresh clone, offline.
SHELL := /bin/bash
.DEFAULT_GOAL := synth

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PY_STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
# The CDK CLI must not phone home: synthesis and tests run without a network.
export CDK_DISABLE_VERSION_CHECK := 1
export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
# The CDK CLI's bundled AWS SDK for JavaScript warns (process.emitWarning, several lines) that it will need
# Node 22 for its releases after January 2027; the pinned CLI runs on Node 20, and the app's own errors stay
# one line.
export NODE_NO_WARNINGS := 1
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# Python writes the bytecode of what it imports (the install skips compiling, below): an environment that
# turns that off would have every test process compile PyTorch, transformers and aws-cdk-lib from source again.
unexport PYTHONDONTWRITEBYTECODE
CDK := npx --no-install cdk --no-notices
TRITON_MME := $(VENV)/bin/triton-mme
BUILD_DIR := build/models
# Context for this run on top of cdk.json, e.g. CONTEXT="-c instanceType=ml.g5.2xlarge -c region=eu-west-1";
# synth, preflight, deploy and diff all read the same settings.
CONTEXT ?=

.PHONY: install synth test lint typecheck unit scan preflight deploy destroy diff acceptance acceptance-role build-models serve-local bench snapshot-update clean

# uv installs the pins (its own pin is the serving check stage's, requirements-uv.txt): about 40 s where pip
# took about 100 s (docs/development.md). It writes no bytecode: Python compiles what a run imports on first
# use (byte-compiling all of PyTorch, transformers and aws-cdk-lib would cost ~100 CPU-seconds).
UV_REQUIREMENTS := triton_mme_cdk/runner_requirements/requirements-uv.txt
UV := $(VENV)/bin/uv pip install --quiet --python $(PY)
$(PY_STAMP): requirements.txt triton_mme_cdk/runner_requirements/requirements-build.txt \
		requirements-client.txt requirements-loadtest.txt \
		requirements-torch.txt requirements-dev.txt $(UV_REQUIREMENTS) pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r $(UV_REQUIREMENTS)
	$(UV) -r requirements-dev.txt
	$(UV) --no-deps --editable .
	touch $@

# checkov (docs/scanners.md) has an environment of its own: it pins boto3 and packaging below the project's.
SCAN_VENV := .venv-scan
SCAN_STAMP := $(SCAN_VENV)/.installed
SCAN_OUT ?= benchmarks/results/checkov
$(SCAN_STAMP): requirements-scan.txt $(PY_STAMP)
	$(PYTHON) -m venv $(SCAN_VENV)
	$(VENV)/bin/uv pip install --quiet --python $(SCAN_VENV)/bin/python -r requirements-scan.txt
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(PY_STAMP) $(NODE_STAMP) $(SCAN_STAMP)

synth: install
	$(CDK) synth --quiet $(CONTEXT)
	@echo "Templates written to cdk.out/"

lint: $(PY_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: $(PY_STAMP)
	$(PY) -m mypy

# One pytest worker per core and two more, as a worker often waits on a server, build or synth it started
# (make test on 2 cores, warm: 3 workers 5 min 40 s, 4 workers 5 min 24 s, 5 workers 5 min 27 s; the same
# CPU time).
# The longest tests (marked slow) start first; tests sharing a module's fixture share a worker (tests/conftest.py).
# The workers are the parallelism: each runs PyTorch's and NumPy's OpenMP threads on one (threads
# per core in every worker only compete; tests/model_build/test_build_every_family.py with 3 workers on 2 cores:
# 165.6 s wall and 320 CPU-seconds with the default threads, 133.1 s and 255 with one; docs/benchmarks.md).
# A thread count of the user's own is left as it is.
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 2 )))
unit: install
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup

# lint and typecheck run beside the tests, each target's output printed whole when it ends.
test: install
	$(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck unit

# checkov on the templates `make synth` writes (CONTEXT= for other settings): fails on a finding neither fixed
# nor skipped with its reason, and on a skip that matches nothing; writes benchmarks/results/checkov.{md,json}
# (SCAN_OUT=prefix to write elsewhere). `make unit` runs the same check on the default settings.
scan: synth
	$(PY) -m benchmarks.checkov_scan --checkov $(SCAN_VENV)/bin/checkov --out $(SCAN_OUT)

snapshot-update: install
	$(PY) -m pytest tests/infra/test_app.py --snapshot-update

# Read-only checks of the AWS account for these settings (quotas, images, bootstrap, region, and changes the
# deployed stack cannot take in one deployment); needs AWS credentials. See docs/first-deploy.md.
preflight: $(PY_STAMP)
	$(PY) app.py preflight $(CONTEXT)

deploy: install preflight
	$(CDK) deploy --all --require-approval never $(CONTEXT)

# Deletes the stack after asking; keeps the versioned model bucket, its access logs and the endpoint's log
# group (docs/first-deploy.md, "Tearing everything down").
destroy: install
	$(CDK) destroy --all $(CONTEXT)

STACK ?= TritonMultiModelEndpoint
# With DIFF_TEMPLATE=path/to/saved.template.json the diff needs no credentials (see docs/deploy.md); without
# it, no credentials is one line naming that route rather than CDK's own errors.
NO_CREDENTIALS := error: make diff compares with the deployed stack and needs AWS credentials (none found); offline, compare with a saved template: make diff DIFF_TEMPLATE=path/to/saved.template.json (docs/deploy.md)
diff: install
ifdef DIFF_TEMPLATE
	$(CDK) diff $(STACK) --template $(DIFF_TEMPLATE) $(CONTEXT)
else
	@$(PY) -c 'import boto3, sys; sys.exit(boto3.Session().get_credentials() is None)' 2>/dev/null \
		|| { echo "$(NO_CREDENTIALS)" >&2; exit 1; }
	$(CDK) diff $(CONTEXT)
endif

# After a deploy: the live endpoint of stack STACK against what its template promised (docs/acceptance.md);
# needs AWS credentials, exits non-zero on a failed check. ACCEPTANCE_ARGS adds options, e.g. --region.
ACCEPTANCE_ARGS ?=
acceptance: $(PY_STAMP)
	$(TRITON_MME) acceptance --stack $(STACK) $(ACCEPTANCE_ARGS)

# The role the deploy workflow assumes for `make acceptance`: the stack's AcceptanceRoleArn output (needs the
# AWS CLI and cloudformation:DescribeStacks).
acceptance-role:
	@arn=$$(aws cloudformation describe-stacks --stack-name $(STACK) --output text \
		--query "Stacks[0].Outputs[?OutputKey=='AcceptanceRoleArn'].OutputValue") || exit 1; \
	case "$$arn" in arn:*) echo "$$arn";; \
	*) echo "error: stack $(STACK) has no AcceptanceRoleArn output; deploy this version first (make deploy)" >&2; \
	exit 1;; esac

# Offline by default (random weights, no TensorRT); `make build-models BUILD_ARGS=` builds the catalog
# as written (pretrained weights download; tensorrt needs a GPU and TensorRT). ONLY=resnet50 builds one model.
BUILD_ARGS ?= --weights random --skip-format tensorrt
CATALOG ?= models.yaml
ONLY ?=
build-models: $(PY_STAMP)
	$(TRITON_MME) build --catalog $(CATALOG) --out $(BUILD_DIR) $(if $(ONLY),--only $(ONLY)) $(BUILD_ARGS)

# Serves build/models in a local CPU Triton in SageMaker multi-model mode (see docs/local-triton.md).
serve-local: $(PY_STAMP)
	$(TRITON_MME) serve-local --models $(BUILD_DIR) $(SERVE_ARGS)

# Measured comparisons (see docs/benchmarks.md); results land in benchmarks/results/. The suite's own
# options go in BENCH_ARGS: `make bench BENCH_ARGS=--quick`.
bench: install
	$(PY) -m benchmarks $(BENCH_ARGS)

clean:
	rm -rf cdk.out build .pytest_cache .mypy_cache .ruff_cache $(SCAN_VENV)
