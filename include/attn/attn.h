#pragma once
// Everything public in one include.
#include "attn/autodiff/tape.h"
#include "attn/error.h"
#include "attn/ops/elementwise.h"
#include "attn/parallel.h"
#include "attn/random.h"
#include "attn/shape.h"
#include "attn/tensor.h"
