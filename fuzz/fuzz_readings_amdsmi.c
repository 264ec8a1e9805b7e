/*
 * Fuzz the amd-smi readings parser: any bytes parse or are refused with a message naming the
 * tool; what parses holds at least one device, unique sorted indexes, used and free within total,
 * byte counts within SW_READINGS_MAX_BYTES, and a JSON view.
 */
#include "readings_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return sw_fuzz_readings(sw_readings_amd_smi, "amd-smi", data, size);
}
