#include "ketama/analysis.h"
