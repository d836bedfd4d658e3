"""Running spark_emr/ jobs on Amazon EMR: EMR Serverless (serverless.py, the default; venv.py builds its Python
environment), or a transient EMR-on-EC2 cluster (cluster.py, steps.py, bootstrap.sh); package.py builds the code
bundle, imports.py checks what the jobs import against requirements-emr.txt."""
