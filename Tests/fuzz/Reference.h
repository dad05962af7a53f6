/* The reference parser of the differential fuzz target (Differential.swift): jansson, imported
   into Swift as a bridging header by run.sh. */
#include <jansson.h>
