#!/bin/sh
# The importers' bad inputs: hostile ONNX external data (tests/importers/hostile_onnx.py
# writes the models), malformed files, and every option given a value it must refuse. Each
# must exit 2 with one line naming what is wrong, no Python traceback, and nothing written.
# Most cases stop before PyTorch is imported, so that this runs in seconds. Skipped (exit
# 77) when python3-torch or python3-onnx is missing (tools/setup installs them).
. "${top_srcdir:-.}/tests/shell_lib.sh"

need_importers importers-invalid
out="-o $work/r.json --weights $work/r.weights"

# refused DESCRIPTION TEXT COMMAND...: exit 2, TEXT in a one-line error without a
# traceback, and neither output written.
refused() {
    what=$1 text=$2
    shift 2
    rm -f "$work/r.json" "$work/r.weights"
    expect 2 "$what" "$@"
    contains "$work/err" "$text" "$what"
    lines=$(wc -l <"$work/err")
    [ "$lines" -eq 1 ] && ok || bad "$what: $lines lines on standard error, expected one"
    grep -q Traceback "$work/err" && bad "$what: a Python traceback" || ok
    [ ! -e "$work/r.json" ] && [ ! -e "$work/r.weights" ] && ok || bad "$what: an output was written"
}

mkdir "$work/m"
"$py" "$src/tests/importers/hostile_onnx.py" "$work/m" || bad "hostile_onnx.py failed"
m=$work/m

# External data done right imports, with its values in the weights file.
# shellcheck disable=SC2086
expect 0 "external data in the model's folder" "$onnx_import" "$m/ok.onnx" --loss mse $out
"$bin" validate -q "$work/r.json" && ok || bad "the model with external data does not validate"
"$py" -c "import sys; sys.path.insert(0, '$src/tools/importers'); import placer_tensors
w = dict(placer_tensors.read(sys.argv[1]))['w']
sys.exit(w.shape != (4, 3) or list(w.reshape(-1)) != list(range(12)))" "$work/r.weights" &&
    ok || bad "the external data's values are not in the weights file"

# External data that must not be read: the tensor and its location named, nothing read.
# shellcheck disable=SC2086
{
refused "a symbolic link to /etc/passwd" "tensor 'w': external data 'passwd.bin': passwd.bin is a symbolic link" \
    "$onnx_import" "$m/symlink.onnx" $out
refused "a symbolic link to a folder" "external data 'etc/passwd': etc is a symbolic link" \
    "$onnx_import" "$m/symlink-dir.onnx" $out
refused "an absolute location" "tensor 'w': external data '/etc/passwd': an absolute path" \
    "$onnx_import" "$m/absolute.onnx" $out
refused "a .. location" "external data '../outside.bin': \"..\" leads out of the model's folder" \
    "$onnx_import" "$m/dotdot.onnx" $out
refused "a .. inside a location" "external data 'sub/../w.bin': \"..\"" \
    "$onnx_import" "$m/dotdot-inner.onnx" $out
refused "a link to /dev/zero, a terabyte long" "external data 'zero.bin': zero.bin is a symbolic link" \
    "$onnx_import" "$m/dev-zero.onnx" $out
refused "a FIFO" "external data 'fifo.bin': not a regular file" "$onnx_import" "$m/fifo.onnx" $out
refused "a folder" "external data 'sub': not a regular file" "$onnx_import" "$m/folder.onnx" $out
refused "a missing file" "external data 'nothere.bin': nothere.bin: No such file or directory" \
    "$onnx_import" "$m/missing.onnx" $out
cp "$m/w.bin" "$work/w.bin"
refused "the weights over the external data" "refusing to overwrite the input $m/w.bin" \
    "$onnx_import" "$m/ok.onnx" -o "$work/r.json" --weights "$m/w.bin"
cmp -s "$m/w.bin" "$work/w.bin" && ok || bad "the external data was overwritten"
refused "no location" "tensor 'w': external data '': no location" \
    "$onnx_import" "$m/no-location.onnx" $out
refused "a length past the file's end" "bytes 0 to 48 lie past the end of the file (40 bytes)" \
    "$onnx_import" "$m/past-end.onnx" $out
refused "an offset past the file's end" "bytes 8 to 56 lie past the end of the file (48 bytes)" \
    "$onnx_import" "$m/offset-past-end.onnx" $out
refused "a length other than the shape's" "length 1000, but the tensor's shape [4, 3] takes 48 bytes" \
    "$onnx_import" "$m/length.onnx" $out
refused "an offset of 5000 digits" "offset '9999999999999999999999999999999999999999' is not a whole number below 10^18" \
    "$onnx_import" "$m/offset-long.onnx" $out
refused "a NUL in a location" "holds a NUL byte" "$onnx_import" "$m/nul-location.onnx" $out
refused "an offset that is not a number" "offset 'abc' is not a whole number" \
    "$onnx_import" "$m/offset-text.onnx" $out
refused "a shape of 2^80 elements" "more than this machine's memory holds" \
    "$onnx_import" "$m/huge-shape.onnx" $out

# Model files that are not ONNX models, or not within placer's limits.
refused "data shorter than the shape" "data-short.onnx: initializer 'w': its data does not match its shape [4, 3]" \
    "$onnx_import" "$m/data-short.onnx" $out
refused "an input past 2^31 elements" "input-huge.onnx: input 'x': 1,280,000,000,000 elements at batch 32, more than placer's limit" \
    "$onnx_import" "$m/input-huge.onnx" $out
refused "a NaN epsilon" "nan-epsilon.onnx: /nodes/0 (batch_norm 'bn'): holds NaN or an infinity, which JSON cannot carry" \
    "$onnx_import" "$m/nan-epsilon.onnx" $out
refused "an input with a zero dimension" "input 'x': dimension 0 is outside 1 .. 2147483647" \
    "$onnx_import" "$m/input-zero.onnx" $out
: >"$work/empty.onnx"
refused "an empty file" "not a valid ONNX model" "$onnx_import" "$work/empty.onnx" $out
refused "a folder as the model" "not a regular file" "$onnx_import" "$m/sub" $out
refused "a FIFO as the model" "not a regular file" "$onnx_import" "$m/fifo.bin" $out
refused "/dev/zero as the model" "/dev/zero: not a regular file" "$onnx_import" /dev/zero $out
refused "a missing model" "nothere.onnx: no such file" "$onnx_import" "$work/nothere.onnx" $out
if [ "$(id -u)" -ne 0 ]; then  # root reads any file
    cp "$m/ok.onnx" "$work/locked.onnx" && chmod 000 "$work/locked.onnx"
    refused "an unreadable model" "cannot open: Permission denied" "$onnx_import" "$work/locked.onnx" $out
fi
}

# Options: zero, negative, huge, non-numeric, not finite, malformed; both importers share
# the training options. All fail before PyTorch is imported.
# shellcheck disable=SC2086
{
for batch in 0 -1 100000000000; do
    refused "--batch $batch" "--batch $batch: must be in 1 .. 2147483647" \
        "$onnx_import" "$m/ok.onnx" --batch "$batch" $out
done
refused "--batch x" "argument --batch: invalid int value: 'x'" "$onnx_import" "$m/ok.onnx" --batch x $out
for lr in 0 -1 nan inf; do
    refused "--lr $lr" "must be a finite number above 0" "$onnx_import" "$m/ok.onnx" --lr "$lr" $out
done
refused "--momentum nan" "--momentum nan: must be in [0, 1)" "$onnx_import" "$m/ok.onnx" --momentum nan $out
refused "--momentum 1" "--momentum 1: must be in [0, 1)" "$onnx_import" "$m/ok.onnx" --momentum 1 $out
refused "--weight-decay nan" "--weight-decay nan: must be a finite number, 0 or more" \
    "$onnx_import" "$m/ok.onnx" --weight-decay nan $out
refused "--weight-decay -1" "--weight-decay -1: must be" "$onnx_import" "$m/ok.onnx" --weight-decay -1 $out
refused "--name ''" "--name: must not be empty" "$onnx_import" "$m/ok.onnx" --name '' $out
refused "--loss bogus" "argument --loss: invalid choice: 'bogus'" "$onnx_import" "$m/ok.onnx" --loss bogus $out
refused "an unknown option" "unrecognized arguments: --bogus" "$onnx_import" "$m/ok.onnx" --bogus $out
refused "no -o" "the following arguments are required: -o/--output" "$onnx_import" "$m/ok.onnx"

t="$torch_import torchvision:resnet18"
refused "--input huge" "--input 100000,100000,100000: 32,000,000,000,000,000 elements at batch 32, more than placer's limit of 2^31" \
    $t --input 100000,100000,100000 $out
refused "--batch 10^11" "--batch 100000000000: must be in 1 .. 2147483647" \
    $t --input 3,32,32 --batch 100000000000 $out
refused "--input with a zero" "--input 3,0,32: dimension 0 is outside 1 .. 2147483647" $t --input 3,0,32 $out
refused "--input negative" "--input -3: dimension -3 is outside" $t --input -3 $out
refused "--input non-numeric" "--input 3,x,32: give whole numbers separated by commas" $t --input 3,x,32 $out
refused "--input malformed" "--input 3,,32: give whole numbers" $t --input 3,,32 $out
refused "--input of rank 6" "--input 1,1,1,1,1,1: rank 6 per sample is more than placer's limit of 5" \
    $t --input 1,1,1,1,1,1 $out
refused "--input at 2^31 + 1" "--input 2147483648: dimension 2147483648 is outside" $t --input 2147483648 $out
for vocab in 0 -1 4294967296; do
    refused "--vocab $vocab" "--vocab $vocab: token ids are i32, so it must be in 1 .. 2^31" \
        $t --input 8 --input-dtype i32 --vocab "$vocab" $out
done
refused "--vocab x" "argument --vocab: invalid int value: 'x'" $t --input 8 --vocab x $out
for classes in 0 -5 100000000000; do
    refused "--classes $classes" "--classes $classes: must be in 1 .. 2147483647" \
        $t --input 3,32,32 --classes "$classes" $out
done
refused "--input-dtype twice for one --input" "2 --input-dtype for 1 --input" \
    $t --input 8 --input-dtype i32 --input-dtype f32 $out
refused "--input-dtype f64" "argument --input-dtype: invalid choice: 'f64'" $t --input 8 --input-dtype f64 $out
refused "--batch-axis past the input" "--batch-axis 4: --input 3,32,32 has 3 axes per sample, so it must be in 0 .. 3" \
    $t --input 3,32,32 --batch-axis 4 $out
refused "--batch-axis twice for one --input" "2 --batch-axis for 1 --input" \
    $t --input 8 --batch-axis 1 --batch-axis 0 $out
refused "--batch-axis -1 for ONNX" "--batch-axis -1: must be 0 or more" \
    "$onnx_import" "$m/ok.onnx" --batch-axis -1 $out
refused "--batch-axis past an ONNX input" "has no batch axis 5" \
    "$onnx_import" "$m/ok.onnx" --batch-axis 5 $out
refused "--arg without =" "--arg takes KEY=VALUE, not 'foo'" $t --input 3,32,32 --arg foo $out
refused "a source without a callable" "give torchvision:NAME or FILE.py:CALLABLE" \
    "$torch_import" resnet18 --input 3,32,32 $out
refused "an output over the weights" "given as two outputs" \
    $t --input 3,32,32 -o "$work/r.json" --weights "$work/r.json"
}

# A model too big for memory: PyTorch's failed allocation is one line, exit 2 (the one case
# here that imports PyTorch).
refused "a classifier of 2^31 - 1 classes" "out of memory: PyTorch could not allocate" \
    "$torch_import" torchvision:resnet18 --input 3,32,32 --classes 2147483647 -o "$work/r.json"

# A bug in the importer is one line and exit 1; PLACER_IMPORT_TRACEBACK=1 adds the traceback.
bug="import sys; sys.path.insert(0, '$src/tools/importers'); import command
command.run(lambda: {}['no such key'], 'import-test')"
expect 1 "an internal error" "$py" -c "$bug"
contains "$work/err" "import-test: internal error: KeyError: 'no such key' (a bug; PLACER_IMPORT_TRACEBACK=1 shows where)" "the bug's line"
grep -q Traceback "$work/err" && bad "a traceback without PLACER_IMPORT_TRACEBACK" || ok
export PLACER_IMPORT_TRACEBACK=1
expect 1 "an internal error, traced" "$py" -c "$bug"
unset PLACER_IMPORT_TRACEBACK
contains "$work/err" "Traceback (most recent call last)" "PLACER_IMPORT_TRACEBACK=1's traceback"

finish importers-invalid
